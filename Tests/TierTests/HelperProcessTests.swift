#if canImport(Glibc)
import Glibc
#endif
@testable import LabTiers
import ScenarioEngine
import ScenarioFormat
import XCTest

/// LabTiers' process management with plain shell commands: own session and group, logs in
/// files, readiness with a deadline and the log's tail in the error, stop that leaves nothing.
final class HelperProcessTests: XCTestCase {
    private var logs: String!

    override func setUpWithError() throws {
        logs = try temporaryDirectory(self)
    }

    private func shell(_ script: String, name: String = "helper") throws -> HelperProcess {
        try HelperProcess(name: name, argv: ["/bin/sh", "-c", script], logDirectory: logs)
    }

    /// pgrp and session of `pid`, from /proc.
    private func groupAndSession(_ pid: pid_t) throws -> (pid_t, pid_t) {
        let fields = try XCTUnwrap(FileText.read("/proc/\(pid)/stat").split(separator: ")").last?.split(separator: " "))
        return (pid_t(fields[2]) ?? -1, pid_t(fields[3]) ?? -1)
    }

    func testAHelperRunsInItsOwnSessionAndGroupWithItsOutputInFiles() throws {
        let helper = try shell("echo ready; echo oops >&2; exec sleep 30")
        let ready = try helper.waitUntil("ready", timeout: 5) { helper.stdoutText().contains("ready") ? true : nil }
        XCTAssertTrue(ready)
        let (group, session) = try groupAndSession(helper.pid)
        XCTAssertEqual(group, helper.pid)
        XCTAssertEqual(session, helper.pid)
        XCTAssertNotEqual(session, getsid(0), "not in blelab's session: a terminal's Ctrl-C does not reach it")
        XCTAssertEqual(helper.stderrText(), "oops\n")
        XCTAssertEqual(HelperRegistry.recorded.filter { $0 == helper.pid }, [helper.pid], "recorded for the signal handlers")

        let report = helper.stop()
        XCTAssertTrue(report.hasPrefix("helper (pid \(helper.pid)): SIGTERM, gone in "), report)
        XCTAssertTrue(report.hasSuffix("was killed by signal 15 (SIGTERM); nothing left behind"), report)
        XCTAssertEqual(helper.exit, .signalled(SIGTERM))
        XCTAssertFalse(helper.isRunning)
        XCTAssertFalse(HelperRegistry.recorded.contains(helper.pid))
        Tiers.assertGroupGone(helper.pid, "after stop")
    }

    func testStopKillsTheWholeGroupAndWhatIgnoresSIGTERM() throws {
        // The leader ignores SIGTERM and has a child in its group that does too.
        let helper = try shell("trap '' TERM; (trap '' TERM; echo child; exec sleep 30) & echo leader; wait")
        _ = try helper.waitUntil("both", timeout: 5) { helper.stdoutText().contains("child") && helper.stdoutText().contains("leader") ? true : nil }
        XCTAssertEqual(ProcessGroup.members(helper.pid).count, 2, "leader and child")
        let report = helper.stop(grace: 0.3)
        XCTAssertTrue(report.contains("SIGKILL after 0.3 s"), report)
        XCTAssertTrue(report.hasSuffix("nothing left behind"), report)
        Tiers.assertGroupGone(helper.pid, "after SIGKILL")
    }

    func testExitingBeforeReadyIsAnErrorWithTheLogsTail() throws {
        let helper = try shell("echo starting; echo 'cannot bind: address in use' >&2; exit 3")
        XCTAssertThrowsError(try helper.waitUntil("the port listening", timeout: 5) { nil as Int? }) { error in
            let text = "\(error)"
            XCTAssertTrue(text.hasPrefix("helper (/bin/sh -c echo starting;"), text)
            XCTAssertTrue(text.contains("exited with status 3 before the port listening"), text)
            XCTAssertTrue(text.contains("cannot bind: address in use"), text)
            XCTAssertTrue(text.contains("starting"), text)
        }
    }

    func testNoReadinessWithinTheTimeoutIsAnErrorWithTheLogsTail() throws {
        let helper = try shell("echo 'still loading'; exec sleep 30")
        defer { helper.stop() }
        let start = WallClock.seconds()
        XCTAssertThrowsError(try helper.waitUntil("'ready' line", timeout: 0.3) { nil as Int? }) { error in
            let text = "\(error)"
            XCTAssertTrue(text.hasPrefix("helper (pid \(helper.pid)): no 'ready' line within 0.3 s"), text)
            XCTAssertTrue(text.contains("still loading"), text)
        }
        XCTAssertLessThan(WallClock.seconds() - start, 2)
    }

    func testAMissingProgramCannotStart() {
        XCTAssertThrowsError(try HelperProcess(name: "ghost", argv: ["/nonexistent/rootcanal"], logDirectory: logs)) { error in
            XCTAssertEqual("\(error)", "ghost: cannot start /nonexistent/rootcanal: No such file or directory (errno 2)")
        }
    }

    func testTheEnvironmentIsPassedWithAdditions() throws {
        let helper = try HelperProcess(name: "env", argv: ["/bin/sh", "-c", "echo \"$BLELAB_TEST_VALUE:$PATH\""], logDirectory: logs,
                                       environment: ["BLELAB_TEST_VALUE": "yes"])
        _ = try helper.waitUntil("exit", timeout: 5) { helper.isRunning ? nil : true }
        XCTAssertEqual(helper.exit, .exited(0))
        XCTAssertTrue(helper.stdoutText().hasPrefix("yes:/"), helper.stdoutText())
    }

    func testRootCanalsLogGivesItsHCIPort() {
        let log = """
        Opening test channel with port 0
        Listening on: 41111 (5)
        Opening an HCI with port 0
        Listening on: 36595 (6)
        """
        XCTAssertEqual(RootCanalProcess.hciPort(inLog: log), 36595)
        XCTAssertNil(RootCanalProcess.hciPort(inLog: "Opening an HCI with port 0\n"))
        XCTAssertNil(RootCanalProcess.hciPort(inLog: "Listening on: 41111 (5)\n"))
    }

    func testListeningSocketsAreFoundInProc() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        let port = UInt16(bigEndian: address.sin_port)
        XCTAssertFalse(Listening.tcp(port: port), "bound, not listening")
        listen(fd, 1)
        XCTAssertTrue(Listening.tcp(port: port))
    }
}
