import Emulator
import Foundation
import Testing

@testable import Control

/// "A hostile local user changes nothing": connection and event-stream limits, idle and stalled
/// connections, against a real server on 127.0.0.1 with real sockets. (A client that stops reading:
/// `ConnectionGuardTests`, on an embedded channel.)
@Suite(.serialized, .timeLimit(.minutes(2))) struct ControlLimitsTests {
    static func limits(connections: Int = 64, streams: Int = 16, idle: Duration = .seconds(30), heartbeat: Duration = .seconds(15))
        -> ControlLimits
    {
        var limits = ControlLimits()
        limits.maximumConnections = connections
        limits.maximumEventStreams = streams
        limits.idleTimeout = idle
        limits.heartbeat = heartbeat
        return limits
    }

    /// Opens an event stream and waits for its answer's head.
    static func openStream(_ port: Int) async throws -> (RawConnection, RawResponse) {
        let connection = try RawConnection(port: port)
        try connection.send(httpRequest("GET", "/v1/events/stream", host: "127.0.0.1:\(port)", close: false))
        let (bytes, _) = await connection.read(timeout: .seconds(10)) { String(decoding: $0, as: UTF8.self).contains("\r\n\r\n") }
        guard let response = RawResponse(bytes) else { throw RawHTTPError("no answer to the event stream request") }
        return (connection, response)
    }

    @Test func eventStreamLimitAnswers503AndAClosedStreamFreesItsSlot() async throws {
        let emulator = try makeEmulator()
        try await withLiveServer(emulator, limits: Self.limits(streams: 2, heartbeat: .milliseconds(100))) { server, port in
            var (first, response): (RawConnection?, RawResponse) = try await Self.openStream(port)
            #expect(response.status == 200)
            #expect(response.headers["content-type"] == "text/event-stream")
            let (second, secondResponse) = try await Self.openStream(port)
            #expect(secondResponse.status == 200)

            let refused = try await rawRequest(port: port, httpRequest("GET", "/v1/events/stream", host: "127.0.0.1:\(port)"))
            #expect(refused.status == 503)
            #expect(refused.error == "too many event-stream clients (2)")
            #expect(refused.json["limit"] as? Int == 2)

            // The client goes away: its slot is free once the next heartbeat finds the connection gone.
            first = nil  // closes the first stream's connection
            let deadline = ContinuousClock.now + .seconds(30)
            var again: RawResponse?
            while ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                guard server.streams.count < 2 else { continue }
                (first, response) = try await Self.openStream(port)
                again = response
                break
            }
            #expect(again?.status == 200)
            #expect(first != nil)
            _ = second
        }
    }

    @Test func idleConnectionsAreClosed() async throws {
        let emulator = try makeEmulator()
        try await withLiveServer(emulator, limits: Self.limits(idle: .milliseconds(300))) { _, port in
            let clock = ContinuousClock()
            // Connected, never a request. The clock starts before the connection: the server's timer may start at once.
            let start = clock.now
            let silent = try RawConnection(port: port)
            let (_, closed) = await silent.read(timeout: .seconds(10))
            #expect(closed)
            #expect(clock.now - start >= .milliseconds(300))

            // Half a request head, never finished (slowloris).
            let partial = try RawConnection(port: port)
            try partial.send("GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n")
            #expect(await partial.read(timeout: .seconds(10)).closed)

            // A head and half of its body.
            let slowBody = try RawConnection(port: port)
            try slowBody.send(
                "POST /v1/faults HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"on\":"
            )
            #expect(await slowBody.read(timeout: .seconds(10)).closed)

            // Kept alive after an answer, then idle.
            let keptAlive = try RawConnection(port: port)
            try keptAlive.send(httpRequest("GET", "/v1/status", host: "127.0.0.1:\(port)", close: false))
            let (bytes, closedAfterAnswer) = await keptAlive.read(timeout: .seconds(10))
            #expect(closedAfterAnswer)
            #expect(RawResponse(bytes)?.status == 200)
        }
    }

    @Test func anEventStreamBeingWrittenIsNotIdle() async throws {
        let emulator = try makeEmulator()
        try await withLiveServer(emulator, limits: Self.limits(idle: .milliseconds(300), heartbeat: .milliseconds(100))) { _, port in
            let (stream, response) = try await Self.openStream(port)
            #expect(response.status == 200)
            emulator.events.record(.note, detail: "while streaming")
            var (bytes, closed) = await stream.read(timeout: .seconds(1.2))
            #expect(!closed, "the stream outlives the idle timeout")
            // Both arrive (a loaded machine may take its time).
            let seen = { @Sendable (bytes: [UInt8]) in
                let text = String(decoding: bytes, as: UTF8.self)
                return text.contains(": keep-alive") && text.contains("while streaming")
            }
            if !seen(bytes) {
                let before = bytes
                let (more, closedLater) = await stream.read(timeout: .seconds(10)) { seen(before + $0) }
                bytes += more
                closed = closedLater
            }
            #expect(!closed)
            #expect(seen(bytes), "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    /// The kernel's queue of connections not yet accepted is as deep as the connection limit, no deeper: a flood of
    /// connections leaves at most that many to accept (each closing another) before a fresh request's turn (a
    /// deeper queue kept one waiting over 10 s in the sandbox's emulated CPU). `ss` reads the listener's backlog
    /// from the kernel (sock_diag: Send-Q of a listening socket).
    @Test func theListenBacklogIsTheConnectionLimit() async throws {
        let emulator = try makeEmulator()
        try await withLiveServer(emulator, limits: Self.limits(connections: 16)) { _, port in
            let ss = Process()
            ss.executableURL = URL(fileURLWithPath: "/usr/bin/ss")
            ss.arguments = ["-ltnH", "sport = :\(port)"]
            let output = Pipe()
            ss.standardOutput = output
            try ss.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            ss.waitUntilExit()
            let fields = text.split(whereSeparator: \.isWhitespace)
            #expect(fields.first == "LISTEN", "\(text)")
            #expect(fields.count > 2 && fields[2] == "16", "Send-Q is the backlog: \(text)")
        }
    }

    /// cap + 50 idle connections: the descriptors stay bounded and a normal request is still served
    /// (the longest-idle connections make room).
    @Test func theConnectionLimitHoldsAndAFreshRequestIsServed() async throws {
        let emulator = try makeEmulator()
        let cap = 16
        try await withLiveServer(emulator, limits: Self.limits(connections: cap)) { server, port in
            let before = openDescriptorCount()
            var idle: [RawConnection] = []
            for _ in 0..<(cap + 50) { idle.append(try RawConnection(port: port)) }
            // Let the server take them all. A connection it accepts while it closes the longest-idle one is counted
            // with it until the close completes (cap + 1, seen under load): the figures are those of one moment
            // once it settled.
            var (connections, descriptors) = (server.connections.count, openDescriptorCount())
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                (connections, descriptors) = (server.connections.count, openDescriptorCount())
                if connections <= cap, descriptors <= before + idle.count + cap + 2 { break }
            }
            #expect(connections <= cap)
            // Our own client sockets, the server's side of at most `cap` of them, and a little slack.
            #expect(descriptors <= before + idle.count + cap + 2)

            // Served, not refused: the longest-idle connection made room (how fast is a benchmark's question).
            let response = try await rawRequest(port: port, httpRequest("GET", "/v1/status", host: "127.0.0.1:\(port)"))
            #expect(response.status == 200)
            // The request's connection made room by closing the longest-idle one; until that close completes both
            // are counted (seen: cap + 1 under load), so the bound is checked once it settled.
            let settled = ContinuousClock.now + .seconds(30)
            while server.connections.count > cap, ContinuousClock.now < settled { try await Task.sleep(for: .milliseconds(20)) }
            #expect(server.connections.count <= cap)
            idle.removeAll()
        }
    }
}
