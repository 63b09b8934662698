import XCTest
@testable import ATT

final class ATTCodeTests: XCTestCase {
    func testErrorCodeValuesAndNames() {
        let expected: [(ATTErrorCode, UInt8, String)] = [
            (.invalidHandle, 0x01, "invalid-handle"), (.readNotPermitted, 0x02, "read-not-permitted"),
            (.writeNotPermitted, 0x03, "write-not-permitted"), (.invalidPDU, 0x04, "invalid-pdu"),
            (.insufficientAuthentication, 0x05, "insufficient-authentication"),
            (.requestNotSupported, 0x06, "request-not-supported"), (.invalidOffset, 0x07, "invalid-offset"),
            (.insufficientAuthorization, 0x08, "insufficient-authorization"),
            (.prepareQueueFull, 0x09, "prepare-queue-full"), (.attributeNotFound, 0x0A, "attribute-not-found"),
            (.attributeNotLong, 0x0B, "attribute-not-long"),
            (.insufficientEncryptionKeySize, 0x0C, "insufficient-encryption-key-size"),
            (.invalidAttributeValueLength, 0x0D, "invalid-attribute-value-length"),
            (.unlikelyError, 0x0E, "unlikely-error"), (.insufficientEncryption, 0x0F, "insufficient-encryption"),
            (.unsupportedGroupType, 0x10, "unsupported-group-type"),
            (.insufficientResources, 0x11, "insufficient-resources"),
            (.databaseOutOfSync, 0x12, "database-out-of-sync"), (.valueNotAllowed, 0x13, "value-not-allowed"),
            (.writeRequestRejected, 0xFC, "write-request-rejected"),
            (.cccdImproperlyConfigured, 0xFD, "cccd-improperly-configured"),
            (.procedureAlreadyInProgress, 0xFE, "procedure-already-in-progress"), (.outOfRange, 0xFF, "out-of-range"),
        ]
        for (code, raw, name) in expected {
            XCTAssertEqual(code.rawValue, raw)
            XCTAssertEqual(code.name, name)
            XCTAssertEqual(ATTErrorCode(name: name), code)
            XCTAssertEqual(ATTErrorCode(name: name.uppercased()), code)
        }
    }

    func testUnnamedAndHexErrorCodes() {
        XCTAssertEqual(ATTErrorCode(0x80).name, "0x80")
        XCTAssertTrue(ATTErrorCode(0x80).isApplicationError)
        XCTAssertTrue(ATTErrorCode(0x9F).isApplicationError)
        XCTAssertFalse(ATTErrorCode(0xA0).isApplicationError)
        XCTAssertTrue(ATTErrorCode.outOfRange.isCommonProfileError)
        XCTAssertEqual(ATTErrorCode(name: "0x0e"), .unlikelyError)
        XCTAssertEqual(ATTErrorCode(name: "0x0E"), .unlikelyError)
        XCTAssertEqual(ATTErrorCode(name: "0x85"), ATTErrorCode(0x85))
        XCTAssertEqual(ATTErrorCode(name: "encryption-key-size-too-short"), .insufficientEncryptionKeySize)
        XCTAssertNil(ATTErrorCode(name: "0x"))
        XCTAssertNil(ATTErrorCode(name: "0x123"))
        XCTAssertNil(ATTErrorCode(name: "write-not-allowed"))
        XCTAssertEqual(ATTErrorCode.writeNotPermitted.description, "write-not-permitted (0x03)")
    }

    func testOpcodeClassification() {
        XCTAssertEqual(ATTOpcode.writeCommand.method, .command)
        XCTAssertEqual(ATTOpcode.signedWriteCommand.method, .command)
        XCTAssertTrue(ATTOpcode.signedWriteCommand.hasAuthenticationSignature)
        XCTAssertEqual(ATTOpcode.readRequest.method, .request)
        XCTAssertEqual(ATTOpcode.readRequest.responseOpcode, .readResponse)
        XCTAssertEqual(ATTOpcode.exchangeMTURequest.responseOpcode, .exchangeMTUResponse)
        XCTAssertEqual(ATTOpcode.executeWriteRequest.responseOpcode, .executeWriteResponse)
        XCTAssertEqual(ATTOpcode.errorResponse.method, .response)
        XCTAssertEqual(ATTOpcode.handleValueNotification.method, .notification)
        XCTAssertEqual(ATTOpcode.multipleHandleValueNotification.method, .notification)
        XCTAssertEqual(ATTOpcode.handleValueIndication.method, .indication)
        XCTAssertEqual(ATTOpcode.handleValueConfirmation.method, .confirmation)
        XCTAssertEqual(ATTOpcode(0x3F).method, .request)
        XCTAssertEqual(ATTOpcode(0x7F).method, .command)
        XCTAssertEqual(ATTOpcode.writeRequest.name, "Write Request")
        XCTAssertEqual(ATTOpcode(0x3F).name, "Opcode 0x3f")
    }
}
