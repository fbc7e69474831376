import ControlContract
import FoundationEssentials
import HTTPTypes
import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The open connections of one control server, shared by their ``ConnectionGuard``s: at most
/// ``ControlLimits/maximumConnections``. At the limit a new connection closes the one idle the longest
/// (no request in progress), so idle connections held open by someone cannot lock the API; when every
/// connection is busy the new one is closed at once. Either way the descriptors stay bounded.
final class ConnectionRegistry: Sendable {
    private struct Entry: Sendable {
        let channel: any Channel
        var requests = 0
        var lastActive = NIODeadline.now()
        var closing = false
    }

    private struct State: Sendable {
        var entries: [ObjectIdentifier: Entry] = [:]
        var refusedSinceWarning = 0
        var lastWarning: NIODeadline?
    }

    /// What ``open(_:)`` decided.
    enum Admission {
        /// Taken; `evicted` (the longest-idle connection) was closed to make room.
        case admitted(evicted: Bool)
        /// To be closed at once; `warn` is the number refused since the last warning, when one is due.
        case refused(warn: Int?)
    }

    let maximum: Int
    private let state = Mutex(State())

    init(maximum: Int) {
        self.maximum = maximum
    }

    /// Connections registered and not yet closed (those being closed included).
    var count: Int { state.withLock { $0.entries.count } }

    /// Registers a new connection, closing the longest-idle one at the limit.
    func open(_ channel: any Channel) -> Admission {
        let (admission, evicted) = state.withLock { state -> (Admission, (any Channel)?) in
            let closing = state.entries.values.count(where: \.closing)
            var evicted: (any Channel)?
            if state.entries.count - closing >= maximum {
                let idle = state.entries.filter { !$0.value.closing && $0.value.requests == 0 }
                guard closing < maximum, let oldest = idle.min(by: { $0.value.lastActive < $1.value.lastActive }) else {
                    state.refusedSinceWarning += 1
                    let now = NIODeadline.now()
                    guard state.lastWarning.map({ now - $0 > .seconds(10) }) ?? true else { return (.refused(warn: nil), nil) }
                    defer {
                        state.refusedSinceWarning = 0
                        state.lastWarning = now
                    }
                    return (.refused(warn: state.refusedSinceWarning), nil)
                }
                state.entries[oldest.key]?.closing = true
                evicted = oldest.value.channel
            }
            state.entries[ObjectIdentifier(channel)] = Entry(channel: channel)
            return (.admitted(evicted: evicted != nil), evicted)
        }
        evicted?.close(promise: nil)
        return admission
    }

    func closed(_ channel: any Channel) {
        state.withLock { _ = $0.entries.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    func requestStarted(on channel: any Channel) {
        state.withLock { $0.entries[ObjectIdentifier(channel)]?.requests += 1 }
    }

    func responseEnded(on channel: any Channel) {
        state.withLock { state in
            guard var entry = state.entries[ObjectIdentifier(channel)] else { return }
            entry.requests = max(0, entry.requests - 1)
            entry.lastActive = .now()
            state.entries[ObjectIdentifier(channel)] = entry
        }
    }
}

/// One per connection, between Hummingbird's HTTP codec and its request handling: registers the
/// connection with the ``ConnectionRegistry`` and closes it when a request does not arrive whole within
/// the idle timeout, or when the client reads nothing of the answer for that long (the channel stays
/// unwritable). Hummingbird's own idle timeout closes connections without a request in progress.
///
/// It also looks up, once, at the connection's first request, which local user opened it (``LoopbackPeer``; an idle
/// connection costs no lookup): a connection from this machine owned by a uid not in `localUsers`, nor in an allowed
/// group, gets **403** for that request, before any token check, and is closed; its requests never reach the API. So
/// is one whose client socket no process holds any more (closed by its client; the kernel reports a time-wait entry as
/// uid 0), and one from this machine whose owner the kernel does not report. A member of an allowed group
/// (``ControlAccess/allowedGroups``) is given the token: its requests reach the API with it. For a client elsewhere the
/// token alone decides.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let registry: ConnectionRegistry
    private let timeout: TimeAmount
    private let logger: Logger
    private var registered = false
    private var requestDeadline: Scheduled<Void>?
    private var writeDeadline: Scheduled<Void>?
    private let access: ControlAccess
    /// The API's token, given to the requests of an allowed group's member; nil when the API has none.
    private let token: String?
    private let peerLookup: @Sendable (SocketAddress, SocketAddress) -> LoopbackPeer.Owner?
    private let membership: @Sendable (UInt32) -> Bool
    private var peerChecked = false
    /// Why a local peer is not let in; its requests are answered 403 here with this message.
    private var refusal: String?
    /// The peer is a member of an allowed group: its requests carry the token.
    private var member = false

    init(
        registry: ConnectionRegistry, timeout: Duration, logger: Logger, access: ControlAccess = ControlAccess(), token: String? = nil,
        peerLookup: @escaping @Sendable (SocketAddress, SocketAddress) -> LoopbackPeer.Owner? = {
            LoopbackPeer.owner(server: $0, client: $1)
        },
        membership: (@Sendable (UInt32) -> Bool)? = nil
    ) {
        self.registry = registry
        self.timeout = TimeAmount(timeout)
        self.logger = logger
        self.access = access
        self.token = token
        self.peerLookup = peerLookup
        self.membership = membership ?? { [access] in access.isMember($0) }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { register(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        register(context)
        context.fireChannelActive()
    }

    private func register(_ context: ChannelHandlerContext) {
        guard !registered else { return }
        registered = true
        switch registry.open(context.channel) {
        case .admitted(let evicted):
            if evicted { logger.debug("control API: \(registry.maximum) connections open; closed the longest idle one") }
        case .refused(let warn):
            if let warn { logger.warning("control API: \(warn) connection(s) refused: all \(registry.maximum) connections are busy") }
            context.close(promise: nil)
        }
    }

    private func checkPeer(_ context: ChannelHandlerContext) {
        peerChecked = true
        guard let server = context.channel.localAddress, let client = context.channel.remoteAddress else { return }
        switch peerLookup(server, client) {
        case .user(let uid) where access.localUsers.contains(uid):
            break
        case .user(let uid) where membership(uid):
            member = true
            logger.info("control API: a connection of uid \(uid), a member of an allowed group (--control-allow-group)")
        case .user(let uid):
            refusal = "this control API belongs to another user's gattemu (uid \(geteuid())); connections of uid \(uid) are refused"
            logger.info("control API: refused a connection of uid \(uid) (only gattemu's own user may use it)")
        case .gone:
            refusal = "this connection's client socket is closed, so its owner is not known; it is refused"
            logger.info("control API: refused a connection whose client socket no process holds")
        case .unknown:
            refusal =
                "cannot tell which user opened this connection from this machine (the kernel's sock_diag did not answer); it is refused"
            logger.warning(
                "control API: refused a local connection whose owner the kernel did not report (sock_diag: is the inet_diag module loadable?)"
            )
        case nil:
            break
        }
    }

    /// The 403 a refused local user gets (with the security headers every answer has), then the connection closes.
    private func refuse(_ context: ChannelHandlerContext, message: String) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var body = (try? encoder.encode(ErrorBody(error: message, status: 403))).map { Array($0) } ?? []
        body.append(0x0A)
        var fields = SecurityHeaders.fields
        fields[.contentType] = "application/json"
        fields[.contentLength] = String(body.count)
        fields[.connection] = "close"
        context.write(wrapOutboundOut(.head(HTTPResponse(status: .forbidden, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(ByteBuffer(bytes: body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        requestDeadline?.cancel()
        writeDeadline?.cancel()
        if registered { registry.closed(context.channel) }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data), !peerChecked { checkPeer(context) }
        if let refusal {
            // Nothing of the request goes further; the answer is written once it has arrived whole (within the timeout).
            switch unwrapInboundIn(data) {
            case .head: if requestDeadline == nil { requestDeadline = closing(context, after: timeout) }
            case .body: break
            case .end: refuse(context, message: refusal)
            }
            return
        }
        switch unwrapInboundIn(data) {
        case .head(var head):
            registry.requestStarted(on: context.channel)
            requestDeadline?.cancel()
            requestDeadline = closing(context, after: timeout)
            if member, let token {
                head.headerFields[.authorization] = "Bearer \(token)"
                context.fireChannelRead(wrapInboundOut(.head(head)))
                return
            }
        case .body:
            break
        case .end:
            requestDeadline?.cancel()
            requestDeadline = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { registry.responseEnded(on: context.channel) }
        context.write(data, promise: promise)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            writeDeadline?.cancel()
            writeDeadline = nil
        } else if writeDeadline == nil {
            writeDeadline = closing(context, after: timeout)
        }
        context.fireChannelWritabilityChanged()
    }

    private func closing(_ context: ChannelHandlerContext, after delay: TimeAmount) -> Scheduled<Void> {
        let channel = context.channel
        return context.eventLoop.scheduleTask(in: delay) { channel.close(promise: nil) }
    }
}

@available(*, unavailable)
extension ConnectionGuard: Sendable {}
