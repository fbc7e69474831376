import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

@testable import Control

/// ``ConnectionGuard`` and ``ConnectionRegistry`` on embedded channels, with a virtual clock.
@Suite struct ConnectionGuardTests {
    static func connection(_ registry: ConnectionRegistry) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try channel.pipeline.syncOperations.addHandler(
            ConnectionGuard(registry: registry, timeout: .seconds(1), logger: Logger(label: "test")))
        return channel
    }

    static let head = HTTPRequestPart.head(HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1:1", path: "/v1/faults"))

    @Test func aRequestThatDoesNotArriveWholeIsCutOff() throws {
        let registry = ConnectionRegistry(maximum: 4)
        let slow = try Self.connection(registry)
        try slow.writeInbound(Self.head)
        try slow.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "{")))
        (slow.eventLoop as! EmbeddedEventLoop).advanceTime(by: .milliseconds(900))
        #expect(slow.isActive)
        (slow.eventLoop as! EmbeddedEventLoop).advanceTime(by: .milliseconds(200))
        #expect(!slow.isActive)
        #expect(registry.count == 0)

        let whole = try Self.connection(registry)
        try whole.writeInbound(Self.head)
        try whole.writeInbound(HTTPRequestPart.end(nil))
        (whole.eventLoop as! EmbeddedEventLoop).advanceTime(by: .seconds(5))
        #expect(whole.isActive, "answering is not the guard's business; Hummingbird's idle timeout runs between requests")
    }

    /// The client reads nothing: the channel stays unwritable (writes wait: back-pressure), and is closed.
    @Test func aClientThatStopsReadingIsCutOff() throws {
        let registry = ConnectionRegistry(maximum: 4)
        let channel = try Self.connection(registry)
        let loop = channel.eventLoop as! EmbeddedEventLoop
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        loop.advanceTime(by: .milliseconds(900))
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        loop.advanceTime(by: .seconds(5))
        #expect(channel.isActive, "it read in time")

        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        loop.advanceTime(by: .milliseconds(1100))
        #expect(!channel.isActive)
    }

    @Test func atTheLimitTheLongestIdleConnectionMakesRoom() throws {
        let registry = ConnectionRegistry(maximum: 2)
        let first = try Self.connection(registry)
        let second = try Self.connection(registry)
        try first.writeInbound(Self.head)  // busy: a request in progress
        let third = try Self.connection(registry)
        #expect(first.isActive && !second.isActive && third.isActive, "the idle one went")
        #expect(registry.count == 2)

        // Every connection busy: a new one is closed at once.
        try third.writeInbound(Self.head)
        let fourth = try Self.connection(registry)
        #expect(!fourth.isActive)
        #expect(first.isActive && third.isActive)

        // An answer ends the request; that connection is idle again and can make room.
        try first.writeOutbound(HTTPResponsePart.end(nil))
        let fifth = try Self.connection(registry)
        #expect(!first.isActive && third.isActive && fifth.isActive)
        #expect(registry.count == 2)
    }
}
