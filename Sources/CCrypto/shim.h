// OpenSSL's libcrypto for Swift (the BLECrypto module): AES-128, AES-CMAC and P-256, the three
// primitives the Security Manager's toolbox is built on (Core Vol 3 Part H 2.2). Found with
// pkg-config (libcrypto); on Debian the headers come with libssl-dev (tools/install-deps.sh
// installs it).
//
// Small C wrappers, because OpenSSL's parameter arrays (OSSL_PARAM) and BIGNUM lifetimes are
// clumsy from Swift. Every buffer is in OpenSSL's (and the specification's) byte order: the most
// significant octet first. Each returns 1 on success and 0 when libcrypto failed; the P-256 ones
// return -1 for input the curve rejects (a scalar out of range, a point not on the curve).
#ifndef BLELAB_CCRYPTO_SHIM_H
#define BLELAB_CCRYPTO_SHIM_H

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/params.h>
#include <stddef.h>
#include <stdint.h>

/// One AES-128 block: out = AES_key(in) (FIPS-197; no chaining, no padding).
static inline int blelab_aes128_encrypt(const uint8_t key[16], const uint8_t in[16], uint8_t out[16]) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return 0;
    int ok = 0, len = 0, tail = 0;
    if (EVP_EncryptInit_ex(ctx, EVP_aes_128_ecb(), NULL, key, NULL) == 1
        && EVP_CIPHER_CTX_set_padding(ctx, 0) == 1
        && EVP_EncryptUpdate(ctx, out, &len, in, 16) == 1
        && EVP_EncryptFinal_ex(ctx, out + len, &tail) == 1
        && len + tail == 16) ok = 1;
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

/// AES-CMAC with a 128-bit key (RFC 4493, NIST SP 800-38B): a 16-octet MAC of `length` octets.
static inline int blelab_aes_cmac(const uint8_t key[16], const uint8_t *message, size_t length, uint8_t out[16]) {
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "CMAC", NULL);
    if (mac == NULL) return 0;
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
    int ok = 0;
    if (ctx != NULL) {
        char cipher[] = "AES-128-CBC";
        OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, cipher, 0),
            OSSL_PARAM_construct_end(),
        };
        size_t written = 0;
        static const uint8_t nothing[1] = {0};
        if (EVP_MAC_init(ctx, key, 16, params) == 1
            && EVP_MAC_update(ctx, length ? message : nothing, length) == 1
            && EVP_MAC_final(ctx, out, &written, 16) == 1
            && written == 16) ok = 1;
        EVP_MAC_CTX_free(ctx);
    }
    EVP_MAC_free(mac);
    return ok;
}

/// The public key (x, y) of the P-256 private key `scalar`; -1 unless 0 < scalar < n.
static inline int blelab_p256_public_key(const uint8_t scalar[32], uint8_t x[32], uint8_t y[32]) {
    EC_GROUP *group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    BN_CTX *bn = BN_CTX_new();
    BIGNUM *d = BN_bin2bn(scalar, 32, NULL), *px = BN_new(), *py = BN_new();
    EC_POINT *q = group ? EC_POINT_new(group) : NULL;
    int ok = 0;
    if (group && bn && d && px && py && q) {
        const BIGNUM *order = EC_GROUP_get0_order(group);
        if (BN_is_zero(d) || BN_cmp(d, order) >= 0) ok = -1;
        else if (EC_POINT_mul(group, q, d, NULL, NULL, bn) == 1
                 && EC_POINT_get_affine_coordinates(group, q, px, py, bn) == 1
                 && BN_bn2binpad(px, x, 32) == 32 && BN_bn2binpad(py, y, 32) == 32) ok = 1;
    }
    EC_POINT_free(q); BN_free(py); BN_free(px); BN_clear_free(d); BN_CTX_free(bn); EC_GROUP_free(group);
    return ok;
}

/// The Diffie-Hellman key: the x coordinate of scalar × (peer_x, peer_y). -1 when the peer's
/// point is not on the curve (Core Vol 3 Part H 2.3.5.6.1: such a key must be rejected) or the
/// scalar is out of range.
static inline int blelab_p256_dh_key(const uint8_t scalar[32], const uint8_t peer_x[32], const uint8_t peer_y[32],
                                     uint8_t out[32]) {
    EC_GROUP *group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    BN_CTX *bn = BN_CTX_new();
    BIGNUM *d = BN_bin2bn(scalar, 32, NULL), *qx = BN_bin2bn(peer_x, 32, NULL), *qy = BN_bin2bn(peer_y, 32, NULL);
    BIGNUM *rx = BN_new();
    EC_POINT *q = group ? EC_POINT_new(group) : NULL, *r = group ? EC_POINT_new(group) : NULL;
    int ok = 0;
    if (group && bn && d && qx && qy && rx && q && r) {
        const BIGNUM *order = EC_GROUP_get0_order(group);
        if (BN_is_zero(d) || BN_cmp(d, order) >= 0) ok = -1;
        else if (EC_POINT_set_affine_coordinates(group, q, qx, qy, bn) != 1 || EC_POINT_is_on_curve(group, q, bn) != 1) ok = -1;
        else if (EC_POINT_mul(group, r, NULL, q, d, bn) == 1 && EC_POINT_is_at_infinity(group, r) != 1
                 && EC_POINT_get_affine_coordinates(group, r, rx, NULL, bn) == 1
                 && BN_bn2binpad(rx, out, 32) == 32) ok = 1;
    }
    EC_POINT_free(r); EC_POINT_free(q); BN_free(rx); BN_free(qy); BN_free(qx); BN_clear_free(d); BN_CTX_free(bn);
    EC_GROUP_free(group);
    return ok;
}

#endif
