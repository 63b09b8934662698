/*
 * vm/probe/hci_reset.c — a probe of Linux virtual controllers over the HCI user channel, standing
 * in for BLELab's Swift transport until that lands. Built by `make vm-probe` (gcc, static), run
 * inside the micro-VM (vm/run.sh) next to btvirt's controllers.
 *
 *   hci_reset reset N [N…]   on each hciN: open the HCI user channel (socket(31, SOCK_RAW, 1),
 *                            bind {31, N, 1}), write an H4 Reset (01 03 0c 00), expect the
 *                            Command Complete (04 0e 04 01 03 0c 00)
 *   hci_reset link A B [C…]  hciA advertises (ADV_IND, with a scan response), hciB scans actively,
 *                            then hciB connects to hciA (LE Create Connection), an ATT Exchange MTU
 *                            goes B→A and its response A→B over ACL, and B disconnects. Any
 *                            further hciC advertise too, so the scan shows whether every controller
 *                            hears every other. Prints every packet and a summary of what worked.
 *
 * Exit status: 0 when every check passed, 1 when one failed, 2 on bad usage.
 * A bind that fails with EBUSY (the kernel still setting the controller up) is retried for 5 s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define AF_BLUETOOTH_ 31
#define BTPROTO_HCI_ 1
#define HCI_CHANNEL_USER_ 1

struct sockaddr_hci_ {
    unsigned short hci_family;
    unsigned short hci_dev;
    unsigned short hci_channel;
};

#define MAXDEV 16
struct dev {
    int index, fd;
    uint8_t addr[6];          /* as on the wire: little-endian */
    int adv_seen_from[MAXDEV]; /* on a scanner: advertising reports per advertiser (by dev slot) */
    int scan_rsp_seen_from[MAXDEV];
    int conn_handle;          /* -1 until LE Connection Complete */
    int conn_role;
    int acl_rx;               /* ACL packets received */
    uint8_t last_acl[64];
    int last_acl_len;
    int disconnected;
    /* the command in flight */
    uint16_t pending_op;
    int pending_done;
    uint8_t pending_ret[64];
    int pending_ret_len;
};
static struct dev devs[MAXDEV];
static int ndevs;

static double t0;
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}
static void out(const char *fmt, ...) {
    va_list ap;
    printf("[%7.3f] ", now() - t0);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}
static char *hex(const uint8_t *p, int n) {
    static char buf[4][1024];
    static int which;
    char *b = buf[which++ & 3];
    int o = 0;
    for (int i = 0; i < n && o < 1000; i++) o += snprintf(b + o, 1024 - o, "%s%02x", i ? " " : "", p[i]);
    b[o] = 0;
    return b;
}
static char *bdaddr(const uint8_t *a) {
    static char buf[4][18];
    static int which;
    char *b = buf[which++ & 3];
    snprintf(b, 18, "%02X:%02X:%02X:%02X:%02X:%02X", a[5], a[4], a[3], a[2], a[1], a[0]);
    return b;
}
static struct dev *dev_by_addr(const uint8_t *a) {
    for (int i = 0; i < ndevs; i++)
        if (memcmp(devs[i].addr, a, 6) == 0) return &devs[i];
    return NULL;
}

static int open_user_channel(int index) {
    int fd = socket(AF_BLUETOOTH_, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI_);
    if (fd < 0) {
        fprintf(stderr, "hci%d: socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI): %s%s\n", index, strerror(errno),
                errno == EAFNOSUPPORT ? " (no Bluetooth in this kernel, or not the initial network namespace)" : "");
        return -1;
    }
    struct sockaddr_hci_ a = { AF_BLUETOOTH_, (unsigned short)index, HCI_CHANNEL_USER_ };
    double deadline = now() + 5;
    while (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        if (errno == EBUSY && now() < deadline) { usleep(50000); continue; }
        fprintf(stderr, "hci%d: bind(HCI_CHANNEL_USER): %s%s\n", index, strerror(errno),
                errno == ENODEV ? " (no such controller)" :
                errno == EBUSY ? " (controller is up or still being set up: bring it down first)" :
                errno == EPERM ? " (needs CAP_NET_ADMIN)" :
                errno == EUSERS ? " (another process holds its user channel)" : "");
        close(fd);
        return -1;
    }
    return fd;
}

static const char *event_type_name(int t) {
    switch (t) {
    case 0: return "ADV_IND"; case 1: return "ADV_DIRECT_IND"; case 2: return "ADV_SCAN_IND";
    case 3: return "ADV_NONCONN_IND"; case 4: return "SCAN_RSP"; default: return "?";
    }
}

/* Print one packet from d and record what the checks need. */
static void handle(struct dev *d, const uint8_t *p, int n) {
    if (n < 1) return;
    if (p[0] == 0x04 && n >= 3) {
        uint8_t code = p[1];
        const uint8_t *e = p + 3;
        int len = p[2];
        if (code == 0x0e && len >= 3) {
            uint16_t op = e[1] | e[2] << 8;
            out("hci%d < Command Complete 0x%04x status 0x%02x%s%s   [%s]\n", d->index, op, len > 3 ? e[3] : 0,
                len > 4 ? " ret " : "", len > 4 ? hex(e + 4, len - 4) : "", hex(p, n));
            if (op == d->pending_op) {
                d->pending_done = 1;
                d->pending_ret_len = len - 3 < 64 ? len - 3 : 64;
                memcpy(d->pending_ret, e + 3, d->pending_ret_len);
            }
        } else if (code == 0x0f && len >= 4) {
            uint16_t op = e[2] | e[3] << 8;
            out("hci%d < Command Status 0x%04x status 0x%02x   [%s]\n", d->index, op, e[0], hex(p, n));
            if (op == d->pending_op) {
                d->pending_done = 1;
                d->pending_ret[0] = e[0];
                d->pending_ret_len = 1;
            }
        } else if (code == 0x3e && len >= 1) {
            uint8_t sub = e[0];
            if (sub == 0x02 && len >= 2) {
                int num = e[1], o = 2;
                for (int i = 0; i < num && o + 9 <= len; i++) {
                    int et = e[o], at = e[o + 1];
                    const uint8_t *a = e + o + 2;
                    int dl = e[o + 8];
                    if (o + 9 + dl + 1 > len) break;
                    int8_t rssi = (int8_t)e[o + 9 + dl];
                    out("hci%d < LE Advertising Report %s %s %s rssi %d data [%s]\n", d->index, event_type_name(et),
                        at ? "random" : "public", bdaddr(a), rssi, hex(e + o + 9, dl));
                    struct dev *from = dev_by_addr(a);
                    if (from) {
                        if (et == 4) d->scan_rsp_seen_from[from - devs]++;
                        else d->adv_seen_from[from - devs]++;
                    }
                    o += 10 + dl;
                }
            } else if (sub == 0x01 && len >= 19) {
                int st = e[1], h = e[2] | (e[3] & 0x0f) << 8, role = e[4];
                out("hci%d < LE Connection Complete status 0x%02x handle 0x%03x role %s peer %s %s interval %d latency %d timeout %d   [%s]\n",
                    d->index, st, h, role ? "peripheral" : "central", e[5] ? "random" : "public", bdaddr(e + 6),
                    e[12] | e[13] << 8, e[14] | e[15] << 8, e[16] | e[17] << 8, hex(p, n));
                if (st == 0) { d->conn_handle = h; d->conn_role = role; }
            } else {
                out("hci%d < LE Meta subevent 0x%02x   [%s]\n", d->index, sub, hex(p, n));
            }
        } else if (code == 0x05 && len >= 4) {
            out("hci%d < Disconnection Complete status 0x%02x handle 0x%03x reason 0x%02x\n", d->index, e[0],
                e[1] | (e[2] & 0x0f) << 8, e[3]);
            if (e[0] == 0) d->disconnected = 1;
        } else if (code == 0x13) {
            out("hci%d < Number Of Completed Packets [%s]\n", d->index, hex(e, len));
        } else {
            out("hci%d < event 0x%02x [%s]\n", d->index, code, hex(p, n));
        }
    } else if (p[0] == 0x02 && n >= 5) {
        int h = p[1] | (p[2] & 0x0f) << 8, pb = (p[2] >> 4) & 3, len = p[3] | p[4] << 8;
        out("hci%d < ACL handle 0x%03x pb %d len %d [%s]\n", d->index, h, pb, len, hex(p + 5, n - 5));
        d->acl_rx++;
        d->last_acl_len = n - 5 < 64 ? n - 5 : 64;
        memcpy(d->last_acl, p + 5, d->last_acl_len);
    } else {
        out("hci%d < packet type 0x%02x [%s]\n", d->index, p[0], hex(p, n));
    }
}

/* Read and handle whatever arrives on any controller for up to ms milliseconds, or until done()
 * says so. */
static int pump(int ms, int (*done)(void)) {
    double end = now() + ms / 1000.0;
    for (;;) {
        if (done && done()) return 1;
        double left = end - now();
        if (left <= 0) return done ? done() : 1;
        struct pollfd pf[MAXDEV];
        for (int i = 0; i < ndevs; i++) pf[i] = (struct pollfd){ devs[i].fd, POLLIN, 0 };
        int r = poll(pf, ndevs, (int)(left * 1000) + 1);
        if (r < 0 && errno != EINTR) { perror("poll"); exit(1); }
        for (int i = 0; i < ndevs; i++) {
            if (!(pf[i].revents & (POLLIN | POLLERR | POLLHUP))) continue;
            uint8_t buf[1100];
            ssize_t got = read(devs[i].fd, buf, sizeof buf);
            if (got < 0) {
                fprintf(stderr, "hci%d: read: %s\n", devs[i].index, strerror(errno));
                exit(1);
            }
            if (got == 0) { fprintf(stderr, "hci%d: closed\n", devs[i].index); exit(1); }
            handle(&devs[i], buf, (int)got);
        }
    }
}

static struct dev *waiting;
static int cmd_done(void) { return waiting->pending_done; }

/* Send a command and wait (handling everything else) for its Command Complete or Status.
 * Returns the status, or -1 on timeout. */
static int cmd(struct dev *d, uint16_t op, const uint8_t *params, int plen, const char *name) {
    uint8_t pkt[260] = { 0x01, op & 0xff, op >> 8, (uint8_t)plen };
    memcpy(pkt + 4, params, plen);
    out("hci%d > %s (0x%04x) [%s]\n", d->index, name, op, hex(pkt, 4 + plen));
    d->pending_op = op;
    d->pending_done = 0;
    if (write(d->fd, pkt, 4 + plen) != 4 + plen) {
        fprintf(stderr, "hci%d: write: %s\n", d->index, strerror(errno));
        return -1;
    }
    waiting = d;
    if (!pump(10000, cmd_done)) {
        out("hci%d: no answer to %s within 10 s\n", d->index, name);
        return -1;
    }
    d->pending_op = 0;
    return d->pending_ret[0];
}

static int reset(struct dev *d) {
    /* The exact bytes the brief names: 01 03 0c 00 → 04 0e 04 01 03 0c 00 */
    int st = cmd(d, 0x0c03, NULL, 0, "Reset");
    return st == 0;
}

static int open_all(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        char *endp;
        long idx = strtol(argv[i], &endp, 10);
        if (*endp || idx < 0 || idx > 0xfffe || ndevs == MAXDEV) { fprintf(stderr, "bad controller index '%s'\n", argv[i]); exit(2); }
        struct dev *d = &devs[ndevs];
        memset(d, 0, sizeof *d);
        d->index = (int)idx;
        d->conn_handle = -1;
        d->fd = open_user_channel(d->index);
        if (d->fd < 0) return 0;
        out("hci%d: HCI user channel open\n", d->index);
        ndevs++;
    }
    return 1;
}

static int failures;
static void check(int ok, const char *what) {
    printf("probe: %-58s %s\n", what, ok ? "yes" : "NO");
    if (!ok) failures++;
}

static struct dev *scanner, *advertiser;
static int all_heard(void) {
    for (int i = 0; i < ndevs; i++) {
        if (&devs[i] == scanner) continue;
        if (devs[i].index < 0) continue;
        if (scanner->adv_seen_from[i] < 1 || scanner->scan_rsp_seen_from[i] < 1) return 0;
    }
    return 1;
}
static int both_connected(void) { return scanner->conn_handle >= 0 && advertiser->conn_handle >= 0; }
static int adv_got_acl(void) { return advertiser->acl_rx > 0; }
static int scan_got_acl(void) { return scanner->acl_rx > 0; }
static int both_disconnected(void) { return scanner->disconnected && advertiser->disconnected; }

static void setup_controller(struct dev *d) {
    static const uint8_t event_mask[8] = { 0xff, 0xff, 0xfb, 0xff, 0x07, 0xf8, 0xbf, 0x3d }; /* incl. LE Meta */
    static const uint8_t le_event_mask[8] = { 0x1f, 0, 0, 0, 0, 0, 0, 0 };
    cmd(d, 0x0c01, event_mask, 8, "Set Event Mask");
    cmd(d, 0x2001, le_event_mask, 8, "LE Set Event Mask");
    if (cmd(d, 0x1009, NULL, 0, "Read BD_ADDR") == 0 && d->pending_ret_len >= 7) memcpy(d->addr, d->pending_ret + 1, 6);
    if (cmd(d, 0x2002, NULL, 0, "LE Read Buffer Size") == 0 && d->pending_ret_len >= 4)
        out("hci%d: address %s, LE ACL buffers: %d x %d bytes\n", d->index, bdaddr(d->addr), d->pending_ret[3],
            d->pending_ret[1] | d->pending_ret[2] << 8);
}

static void start_advertising(struct dev *d, int n) {
    uint8_t params[15] = { 0x20, 0x00, 0x20, 0x00, 0x00 /* ADV_IND */, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0x07, 0x00 };
    cmd(d, 0x2006, params, 15, "LE Set Advertising Parameters");
    uint8_t data[32] = { 0 };
    char name[16];
    int nl = snprintf(name, sizeof name, "probe-hci%d", d->index);
    int o = 1;
    data[o++] = 2; data[o++] = 0x01; data[o++] = 0x06;              /* flags */
    data[o++] = 3; data[o++] = 0x03; data[o++] = 0x0d; data[o++] = 0x18; /* 16-bit UUIDs: 180D */
    data[o++] = (uint8_t)(nl + 1); data[o++] = 0x09; memcpy(data + o, name, nl); o += nl;
    data[0] = (uint8_t)(o - 1);
    cmd(d, 0x2008, data, 32, "LE Set Advertising Data");
    uint8_t rsp[32] = { 7, 3, 0x03, 0x1a, 0x18, 2, 0x0a, (uint8_t)(int8_t)n }; /* 181A + TX power */
    cmd(d, 0x2009, rsp, 32, "LE Set Scan Response Data");
    uint8_t on = 1;
    cmd(d, 0x200a, &on, 1, "LE Set Advertising Enable");
}

static int run_link(void) {
    advertiser = &devs[0];
    scanner = &devs[1];
    for (int i = 0; i < ndevs; i++) {
        int ok = reset(&devs[i]);
        char what[80];
        snprintf(what, sizeof what, "hci%d answers Reset with Command Complete, status 0", devs[i].index);
        check(ok, what);
        if (!ok) return 1;
        setup_controller(&devs[i]);
    }
    for (int i = 0; i < ndevs; i++)
        if (&devs[i] != scanner) start_advertising(&devs[i], i);

    /* Active scan: interval = window = 10 ms, no duplicate filtering */
    uint8_t sp[7] = { 0x01, 0x10, 0x00, 0x10, 0x00, 0x00, 0x00 };
    cmd(scanner, 0x200b, sp, 7, "LE Set Scan Parameters (active)");
    uint8_t se[2] = { 0x01, 0x00 }, sd[2] = { 0x00, 0x00 };
    double t_scan = now();
    cmd(scanner, 0x200c, se, 2, "LE Set Scan Enable (duplicates not filtered)");
    int heard = pump(5000, all_heard);
    double heard_after = now() - t_scan;
    for (int i = 0; i < ndevs; i++) {
        if (&devs[i] == scanner) continue;
        char what[100];
        snprintf(what, sizeof what, "hci%d hears hci%d's advertising (ADV_IND)", scanner->index, devs[i].index);
        check(scanner->adv_seen_from[i] > 0, what);
        snprintf(what, sizeof what, "hci%d gets hci%d's scan response (SCAN_RSP)", scanner->index, devs[i].index);
        check(scanner->scan_rsp_seen_from[i] > 0, what);
    }
    if (heard) printf("probe: the scan heard every advertiser %.3f s after it started\n", heard_after);
    /* Are advertising events repeated (as on air, every advertising interval: 20 ms here)? */
    int before = scanner->adv_seen_from[0];
    pump(2000, NULL);
    int repeats = scanner->adv_seen_from[0] - before;
    printf("probe: hci%d's advertising repeated %d time(s) in the next 2 s of scanning (on air: ~100)\n",
           advertiser->index, repeats);
    cmd(scanner, 0x200c, sd, 2, "LE Set Scan Enable (off)");

    /* Advertising that starts while a scan is running */
    uint8_t off = 0, on = 1;
    cmd(advertiser, 0x200a, &off, 1, "LE Set Advertising Enable (off)");
    cmd(scanner, 0x200c, se, 2, "LE Set Scan Enable");
    pump(300, NULL);
    before = scanner->adv_seen_from[0];
    cmd(advertiser, 0x200a, &on, 1, "LE Set Advertising Enable (on, during the scan)");
    pump(2000, NULL);
    printf("probe: advertising started during a scan gave %d report(s) in 2 s\n", scanner->adv_seen_from[0] - before);
    cmd(scanner, 0x200c, sd, 2, "LE Set Scan Enable (off)");

    /* Connect scanner → advertiser */
    uint8_t cc[25] = { 0x60, 0x00, 0x30, 0x00, 0x00, 0x00 /* public */, 0, 0, 0, 0, 0, 0, 0x00,
                       0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xc8, 0x00, 0x00, 0x00, 0x00, 0x00 };
    memcpy(cc + 6, advertiser->addr, 6);
    double t_conn = now();
    int st = cmd(scanner, 0x200d, cc, 25, "LE Create Connection");
    check(st == 0, "LE Create Connection accepted (Command Status 0)");
    pump(10000, both_connected);
    printf("probe: connection after %.3f s\n", now() - t_conn);
    check(scanner->conn_handle >= 0 && scanner->conn_role == 0, "central gets LE Connection Complete, role central");
    check(advertiser->conn_handle >= 0 && advertiser->conn_role == 1,
          "peripheral gets LE Connection Complete, role peripheral");
    if (!both_connected()) return 1;
    if (ndevs > 2) {
        /* A third controller scans: a legacy advertiser stops advertising once connected. */
        struct dev *third = &devs[2];
        int b = third->adv_seen_from[0];
        cmd(third, 0x200b, sp, 7, "LE Set Scan Parameters (active)");
        cmd(third, 0x200c, se, 2, "LE Set Scan Enable");
        pump(1500, NULL);
        cmd(third, 0x200c, sd, 2, "LE Set Scan Enable (off)");
        printf("probe: after the connection hci%d still heard hci%d advertising %d time(s) in 1.5 s\n",
               third->index, advertiser->index, third->adv_seen_from[0] - b);
    }

    /* ATT Exchange MTU Request central → peripheral on the ATT fixed channel (CID 4) */
    uint8_t acl[12] = { 0x02, (uint8_t)(scanner->conn_handle & 0xff), (uint8_t)(scanner->conn_handle >> 8),
                        7, 0, 3, 0, 4, 0, 0x02, 0x17, 0x00 };
    out("hci%d > ACL ATT Exchange MTU Request [%s]\n", scanner->index, hex(acl, 12));
    if (write(scanner->fd, acl, 12) != 12) perror("write ACL");
    pump(5000, adv_got_acl);
    check(advertiser->acl_rx > 0 && advertiser->last_acl_len == 7 && memcmp(advertiser->last_acl, acl + 5, 7) == 0,
          "ACL central -> peripheral arrives intact (ATT MTU Request)");
    uint8_t rsp[12] = { 0x02, (uint8_t)(advertiser->conn_handle & 0xff), (uint8_t)(advertiser->conn_handle >> 8),
                        7, 0, 3, 0, 4, 0, 0x03, 0x17, 0x00 };
    out("hci%d > ACL ATT Exchange MTU Response [%s]\n", advertiser->index, hex(rsp, 12));
    if (write(advertiser->fd, rsp, 12) != 12) perror("write ACL");
    pump(5000, scan_got_acl);
    check(scanner->acl_rx > 0 && scanner->last_acl_len == 7 && memcmp(scanner->last_acl, rsp + 5, 7) == 0,
          "ACL peripheral -> central arrives intact (ATT MTU Response)");
    pump(300, NULL); /* Number Of Completed Packets, if any */

    uint8_t dc[3] = { (uint8_t)(scanner->conn_handle & 0xff), (uint8_t)(scanner->conn_handle >> 8), 0x13 };
    cmd(scanner, 0x0406, dc, 3, "Disconnect");
    pump(5000, both_disconnected);
    check(scanner->disconnected, "central gets Disconnection Complete");
    check(advertiser->disconnected, "peripheral gets Disconnection Complete");
    return 0;
}

int main(int argc, char **argv) {
    t0 = now();
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 3 && strcmp(argv[1], "reset") == 0) {
        if (!open_all(argc - 2, argv + 2)) return 1;
        for (int i = 0; i < ndevs; i++) {
            char what[80];
            snprintf(what, sizeof what, "hci%d answers Reset with Command Complete, status 0", devs[i].index);
            check(reset(&devs[i]), what);
        }
    } else if (argc >= 4 && strcmp(argv[1], "link") == 0) {
        if (!open_all(argc - 2, argv + 2)) return 1;
        run_link();
    } else {
        fprintf(stderr, "usage: hci_reset reset N [N…] | hci_reset link ADVERTISER SCANNER [MORE_ADVERTISERS…]\n");
        return 2;
    }
    printf("probe: %d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
