import Transport
import XCTest

final class SocketEndpointTests: XCTestCase {
    func testTheAcceptedForms() throws {
        XCTAssertEqual(try SocketEndpoint(parsing: "tcp:127.0.0.1:6402"), .tcp(host: "127.0.0.1", port: 6402))
        XCTAssertEqual(try SocketEndpoint(parsing: "127.0.0.1:6402"), .tcp(host: "127.0.0.1", port: 6402))
        XCTAssertEqual(try SocketEndpoint(parsing: "localhost:1234"), .tcp(host: "localhost", port: 1234))
        XCTAssertEqual(try SocketEndpoint(parsing: "tcp:[::1]:6402"), .tcp(host: "::1", port: 6402))
        XCTAssertEqual(try SocketEndpoint(parsing: "[::1]:0"), .tcp(host: "::1", port: 0))
        XCTAssertEqual(try SocketEndpoint(parsing: "unix:/tmp/bt-server-le"), .unix(path: "/tmp/bt-server-le"))
        XCTAssertEqual(try SocketEndpoint(parsing: "unix:relative.sock"), .unix(path: "relative.sock"))
        XCTAssertEqual(try SocketEndpoint(parsing: "/tmp/x"), .unix(path: "/tmp/x"))
        XCTAssertEqual(try SocketEndpoint(parsing: "unix:/tmp/a:b"), .unix(path: "/tmp/a:b"))
    }

    func testDescriptionsAndArgumentsRoundTrip() throws {
        let cases: [(SocketEndpoint, String, String)] = [
            (.tcp(host: "127.0.0.1", port: 6402), "tcp 127.0.0.1:6402", "tcp:127.0.0.1:6402"),
            (.tcp(host: "::1", port: 7), "tcp [::1]:7", "tcp:[::1]:7"),
            (.unix(path: "/tmp/x"), "unix /tmp/x", "unix:/tmp/x"),
        ]
        for (endpoint, description, argument) in cases {
            XCTAssertEqual(endpoint.description, description)
            XCTAssertEqual(endpoint.argument, argument)
            XCTAssertEqual(try SocketEndpoint(parsing: argument), endpoint)
        }
    }

    func testMistakesSayWhatIsWrong() {
        let cases: [(String, String)] = [
            ("rootcanal", "'rootcanal' is not a socket endpoint: expected tcp:HOST:PORT, unix:PATH or HOST:PORT"),
            ("unix:", "'unix:' is not a socket endpoint: the path after 'unix:' is empty"),
            ("tcp::6402", "'tcp::6402' is not a socket endpoint: the host before ':6402' is empty"),
            ("tcp:127.0.0.1:", "'tcp:127.0.0.1:' is not a socket endpoint: the port '' is not a number from 0 to 65535"),
            ("127.0.0.1:65536", "'127.0.0.1:65536' is not a socket endpoint: the port '65536' is not a number from 0 to 65535"),
            ("127.0.0.1:-1", "'127.0.0.1:-1' is not a socket endpoint: the port '-1' is not a number from 0 to 65535"),
            ("tcp:::1:6402", "'tcp:::1:6402' is not a socket endpoint: write an IPv6 host in brackets, as in tcp:[::1]:6402"),
            ("[::1:6402", "'[::1:6402' is not a socket endpoint: an IPv6 host needs its closing ']', as in tcp:[::1]:6402"),
        ]
        for (text, message) in cases {
            XCTAssertThrowsError(try SocketEndpoint(parsing: text), text) { error in
                XCTAssertEqual((error as? SocketEndpointError)?.description, message)
            }
        }
    }
}
