import BlueZ
import Bluetooth
import DBus
import FoundationEssentials
import Profile

/// The profile's L2CAP channels (`channels`): a kernel listener per channel, and per open channel an inbox (its
/// SDUs, handed to the engine one at a time, in order) and an outbox (what the rules send: SDUs, streams, the close,
/// in order, each waiting for the central's credits without holding up anything else).
struct ChannelState {
    var listeners: [String: L2CAPListener] = [:]
    /// The PSM each channel listens on (the kernel's pick for `"any"`).
    var psms: [String: UInt16] = [:]
    var open: [UInt64: OpenChannel] = [:]
    var nextLink: UInt64 = 1
    /// The refusal each channel's listener holds for faults (``FaultEngine/heldRefusal(forChannel:)``); a channel held
    /// at `psm-not-supported` has no listener.
    var held: [String: LECreditBasedChannel.Refusal] = [:]
    /// Failed attempts to listen again on a channel's PSM after its `psm-not-supported` fault went.
    var relistenAttempts: [String: Int] = [:]
}

/// One open channel.
struct OpenChannel {
    var channel: String
    var link: ChannelLink
    var socket: L2CAPChannelSocket
    /// Finished when the channel closes by any path, which ends its receiving task.
    var inbox: AsyncStream<[UInt8]>.Continuation
    var outbox: AsyncStream<ChannelOutgoing>.Continuation
    var tasks: [Task<Void, Never>]
}

/// What the outbox of a channel takes, in order.
enum ChannelOutgoing: Sendable {
    case sdu([UInt8])
    case stream(StreamSource)
    case close
}

extension Emulator {
    /// SDUs a channel may have read and waiting for the engine (a slow reader's fault holds them): at this many it
    /// stops reading the socket, and reads again once half have been handled. Meanwhile what the central sends waits
    /// in the kernel's buffer, and once that is full the kernel gives the central no more credits: the back-pressure
    /// of a device that does not keep up. Only where the kernel withholds credits until SDUs are read (Linux 6.10 and
    /// later, ``L2CAPChannelSocket/kernelWithholdsCreditsUntilRead``); before, it gives them back as SDUs arrive and
    /// drops, unseen, those that find its buffer full, so gattemu reads on and drops past ``channelInboxLimit``, logged.
    static let channelReadAhead = 32
    /// SDUs a channel may have waiting for the engine where the kernel gives credits back whatever is read (Linux
    /// before 6.10); past that, the next are dropped and logged.
    static let channelInboxLimit = 256
    /// SDUs and streams a channel may have waiting to go out; past that, the next are dropped and logged.
    static let channelOutboxLimit = 256
    /// The most bytes of an SDU the event log keeps.
    static let loggedSDUBytes = 256

    /// Listens on every channel of the profile, and publishes each PSM where the profile asks.
    func startChannels(on adapter: Adapter) throws(BlueZError) {
        for definition in profile.channels where channels.listeners[definition.id] == nil {
            let id = definition.id
            let fixed: UInt16? = if case .fixed(let psm) = definition.psm { psm } else { nil }
            let listener: L2CAPListener
            do {
                listener = try listen(definition, psm: fixed, on: adapter)
            } catch {
                throw .channelUnavailable(
                    "channel \"\(id)\" (\(definition.path)) cannot listen on PSM \(definition.psm) on \(adapter.name): \(error)")
            }
            channels.listeners[id] = listener
            channels.psms[id] = listener.psm
            if definition.publish != nil {
                let value = ChannelDefinition.psmBytes(listener.psm)
                engine.store(value, for: definition.psmCharacteristic)
                application?.setValue(definition.psmCharacteristic, value: value)
            }
            log.record(
                .channel,
                detail:
                    "channel \(id) listening on PSM \(LECreditBasedChannel.text(listener.psm)) (MTU \(definition.mtu), security \(definition.security.rawValue))"
                    + (definition.publish.map { ", published in \($0)" } ?? ""))
        }
        updateHeldRefusals()
    }

    /// How many times (100 ms apart) a channel whose `psm-not-supported` fault went tries to listen on its PSM again.
    static let relistenAttempts = 50

    /// A listener for channel `definition` on `psm` (nil: the kernel picks one), at the profile's security.
    private func listen(_ definition: ChannelDefinition, psm: UInt16?, on adapter: Adapter) throws(L2CAPError) -> L2CAPListener {
        let id = definition.id
        return try L2CAPListener.listen(
            on: adapter.address, random: false, psm: psm, mtu: definition.mtu, security: Self.level(definition.security),
            deferred: channelNeedsDeferral(id), loop: loop
        ) { [weak self] socket in
            Task(executorPreference: self?.loop) { await self?.channelRequested(id, socket: socket) }
        }
    }

    /// Puts each listener in the state the faults holding a refusal ask for now (after faults come or go): no listener
    /// for `psm-not-supported` (the kernel answers 0x0002), a raised `BT_SECURITY` for the security refusals (the
    /// kernel answers a link short of it 0x0005 or 0x0008; a link at that level is accepted), the profile's own when
    /// none is held. The kernel answers such requests before gattemu sees them: they are not in the event log.
    func updateHeldRefusals() {
        guard !stopped else { return }
        for definition in profile.channels {
            let id = definition.id
            guard let psm = channels.psms[id] else { continue }  // not listening yet: startChannels comes back here
            let wanted = faultState.engine.heldRefusal(forChannel: id)
            let current = channels.held[id]
            guard wanted?.refusal != current else { continue }
            if current == .psmNotSupported, channels.listeners[id] == nil, let adapter {
                do {
                    channels.listeners[id] = try listen(definition, psm: psm, on: adapter)
                    if let failed = channels.relistenAttempts.removeValue(forKey: id) {
                        log.record(.note, detail: "channel \(id): listening on its PSM again took \(failed + 1) attempts")
                    }
                } catch {
                    // Something still holds the PSM: the closed listener (its descriptor is closed by a job queued on
                    // the loop) or another program that bound it meanwhile. Tried again every 100 ms for 5 s; then the
                    // channel stays refused (`refusing` in its listing) and an error says so.
                    let attempts = channels.relistenAttempts[id, default: 0] + 1
                    channels.relistenAttempts[id] = attempts
                    if attempts < Self.relistenAttempts {
                        Task(executorPreference: loop) { [weak self] in
                            try? await Task.sleep(for: .milliseconds(100))
                            await self?.updateHeldRefusals()
                        }
                    } else {
                        log.record(
                            .error, detail: "channel \(id) cannot listen on PSM \(LECreditBasedChannel.text(psm)) again: \(error)")
                    }
                    continue
                }
            }
            let profileLevel = Self.level(definition.security)
            let level: L2CAPSecurityLevel
            switch wanted?.refusal {
            case .psmNotSupported:
                channels.listeners.removeValue(forKey: id)?.close()
                level = profileLevel
            case .insufficientAuthentication: level = max(profileLevel, .fips)
            case .insufficientEncryption: level = max(profileLevel, .medium)
            case .insufficientAuthorization, nil: level = profileLevel
            }
            if let listener = channels.listeners[id], !listener.setSecurity(level) {
                log.record(.error, detail: "channel \(id): the kernel refused its security level \(level) (BT_SECURITY); left as it was")
                continue
            }
            channels.held[id] = wanted?.refusal
            if let wanted {
                faultState.engine.noteHeld(wanted.faults)
                log.record(
                    .channel,
                    detail: "channel \(id): the kernel refuses every request with \(wanted.refusal.text) while fault"
                        + " \(wanted.faults.joined(separator: ", ")) is installed"
                        + (wanted.refusal == .psmNotSupported
                            ? " (no listener on PSM \(LECreditBasedChannel.text(psm)); open channels stay)"
                            : " (a link at that security is accepted; open channels stay)"))
            } else {
                log.record(
                    .channel,
                    detail: "channel \(id): requests taken again on PSM \(LECreditBasedChannel.text(psm))")
            }
        }
    }

    /// Whether requests for channel `id` must wait for gattemu (deferred setup): while it may have to refuse one or
    /// accept it late, that is while a fault that refuses or delays its requests (`on: channel`) can still fire, or
    /// its `maximumOpen` are open.
    /// Otherwise the kernel accepts each itself: Linux closes an LE channel accepted after deferral 40 s after its
    /// request (its connection timer is never stopped on that path; 6.1 and 6.12 alike), one it accepted itself lives
    /// as long as the link.
    func channelNeedsDeferral(_ id: String) -> Bool {
        guard let definition = profile.channel(id) else { return true }
        return openChannels(id).count >= definition.maximumOpen || faultState.engine.mayRefuseOrDelayRequests(forChannel: id)
    }

    /// The channels open on profile channel `id`.
    func openChannels(_ id: String) -> [OpenChannel] {
        channels.open.values.filter { $0.channel == id }
    }

    /// Sets each listener's deferral as ``channelNeedsDeferral(_:)`` says now (after channels open or close and
    /// faults come or go).
    func updateChannelDeferral() {
        for (id, listener) in channels.listeners { listener.setDeferred(channelNeedsDeferral(id)) }
    }

    /// Listens no more and closes every open channel.
    func stopChannels() {
        for listener in channels.listeners.values { listener.close() }
        channels.listeners = [:]
        channels.held = [:]
        for open in channels.open.values {
            open.socket.close()
            open.inbox.finish()
            open.outbox.finish()
            for task in open.tasks { task.cancel() }
        }
        channels.open = [:]
    }

    static func level(_ security: ChannelSecurity) -> L2CAPSecurityLevel {
        switch security {
        case .none: .low
        case .encrypted: .medium
        case .authenticated: .high
        case .secure: .fips
        }
    }

    /// A central asked for a channel: accepted unless a fault refuses it or `maximumOpen` are open already (after the
    /// delay a fault asks for: the central waits, and the kernel refuses it itself after 40 s).
    func channelRequested(_ id: String, socket: L2CAPChannelSocket) async {
        let central = CentralID(address: socket.peer)
        // Whatever becomes of it, deferral may end now that it was taken (``L2CAPListener/setDeferred(_:)``).
        defer { updateChannelDeferral() }
        guard !stopped, let definition = profile.channel(id) else {
            socket.refuse()
            return
        }
        let plan = faultState.engine.plan(for: FaultOperation(.channel, centrals: [central.address], channel: id))
        if !plan.isEmpty { record(plan, central: central.address, characteristic: nil) }
        if plan.disconnect { scheduleDisconnect([central.address]) }
        if plan.refuseChannel {
            socket.refuse()
            log.record(
                .channel, central: central.address,
                detail: socket.isDeferred
                    ? "refused a request for channel \(id): a fault (result 0x0006)"
                    : "closed channel \(id) as a fault asked to refuse it: the kernel had accepted it before the fault came")
            return
        }
        if plan.delayMilliseconds > 0, !socket.isDeferred {
            log.record(
                .note, central: central.address,
                detail: "channel \(id): the delay not applied: the kernel accepted the channel before the fault came")
        }
        if plan.delayMilliseconds > 0, socket.isDeferred {
            log.record(
                .channel, central: central.address, detail: "channel \(id): the request waits \(plan.delayMilliseconds) ms (a fault)")
            try? await Task.sleep(for: .milliseconds(plan.delayMilliseconds))
            guard !stopped else {
                socket.refuse()
                return
            }
        }
        var openOfChannel = openChannels(id).count
        if openOfChannel >= definition.maximumOpen {
            // A channel the central closed just before asking again may not have been read as closed yet: close it now.
            for open in openChannels(id) where !open.socket.isConnected {
                await channelClosed(open.link, channel: id, by: "the central or the link")
            }
            openOfChannel = openChannels(id).count
        }
        guard openOfChannel < definition.maximumOpen else {
            socket.refuse()
            log.record(
                .channel, central: central.address,
                detail: socket.isDeferred
                    ? "refused a request for channel \(id): \(openOfChannel) open, its maximumOpen (result 0x0006)"
                    : "closed channel \(id): \(openOfChannel) open, its maximumOpen (the kernel accepted it before gattemu deferred requests)"
            )
            return
        }
        let link = ChannelLink(id: channels.nextLink, central: central)
        channels.nextLink += 1
        // Bounded by the read-ahead (reading pauses at that many waiting), or by the inbox limit (past it, dropped).
        let (inbox, inboxContinuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .unbounded)
        let backPressure = L2CAPChannelSocket.kernelWithholdsCreditsUntilRead
        let waiting = Locked((count: 0, dropped: 0))
        let accepted = socket.accept(
            onSDU: { sdu in
                let (take, more) = waiting.withLock { state -> (Bool, Bool) in
                    guard backPressure || state.count < Self.channelInboxLimit else {
                        state.dropped += 1
                        return (false, true)
                    }
                    state.count += 1
                    return (true, !backPressure || state.count < Self.channelReadAhead)
                }
                if take { inboxContinuation.yield(sdu) }
                return more
            },
            onClose: { inboxContinuation.finish() })
        guard accepted else {
            log.record(.channel, central: central.address, detail: "channel \(id): the request was gone before it was accepted")
            return
        }
        let (outbox, outboxContinuation) = AsyncStream.makeStream(
            of: ChannelOutgoing.self, bufferingPolicy: .bufferingOldest(Self.channelOutboxLimit))
        let receiving = Task(executorPreference: loop) { [weak self] in
            for await sdu in inbox {
                let lost = waiting.withLock { state in
                    defer { state.dropped = 0 }
                    return state.dropped
                }
                await self?.channelReceived(sdu, on: link, channel: id, dropped: lost)
                let drained = waiting.withLock { state in
                    state.count -= 1
                    return state.count <= Self.channelReadAhead / 2
                }
                if backPressure, drained { socket.resumeReading() }
            }
            await self?.channelClosed(link, channel: id, by: "the central or the link")
        }
        let sending = Task(executorPreference: loop) { [weak self] in
            for await item in outbox {
                guard let self else { return }
                await self.channelSend(item, on: link, channel: id, socket: socket)
            }
        }
        channels.open[link.id] = OpenChannel(
            channel: id, link: link, socket: socket, inbox: inboxContinuation, outbox: outboxContinuation, tasks: [receiving, sending])
        updateChannelDeferral()  // at once: its maximumOpen may be reached
        log.record(
            .channel, central: central.address,
            detail: "open \(id) \(link) (the central takes SDUs of \(socket.sendMTU.map(String.init) ?? "?") bytes)"
                + (socket.isDeferred ? "; accepted after deferral: Linux closes it 40 s after its request" : ""))
        _ = try? await run(engine.handle(.channelOpen(channel: id, link: link)), central: central)
    }

    func channelReceived(_ sdu: [UInt8], on link: ChannelLink, channel id: String, dropped: Int) async {
        guard channels.open[link.id] != nil else { return }
        let central = link.central.address
        if dropped > 0 {
            log.record(
                .error, central: central,
                detail: "channel \(id) \(link): \(dropped) SDUs dropped: \(Self.channelInboxLimit) were waiting for the rules")
        }
        log.record(
            .channel, central: central, value: Array(sdu.prefix(Self.loggedSDUBytes)), detail: "sdu in \(id) \(link), \(sdu.count) bytes")
        let plan = faultState.engine.plan(for: FaultOperation(.sdu, centrals: [central], channel: id))
        var value = sdu
        if !plan.isEmpty {
            record(plan, central: central, characteristic: nil)
            if plan.delayMilliseconds > 0 { try? await Task.sleep(for: .milliseconds(plan.delayMilliseconds)) }
            value = plan.mutated(sdu, limit: profile.channel(id)?.mtu ?? sdu.count).bytes
            if plan.drop {
                log.record(.note, central: central, detail: "channel \(id) \(link): the SDU dropped (a fault): the rules do not see it")
            } else if value != sdu {
                log.record(
                    .note, central: central, value: Array(value.prefix(Self.loggedSDUBytes)),
                    detail: "channel \(id) \(link): the SDU changed by faults (\(sdu.count) → \(value.count) bytes): the rules get this one"
                )
            }
        }
        if !plan.drop, channels.open[link.id] != nil {
            _ = try? await run(engine.handle(.sdu(channel: id, link: link, value: value)), central: link.central)
        }
        await afterChannelFaults(plan, link: link, channel: id)
    }

    /// What a channel fault does after its SDU: close the channel (the link stays), disconnect the central.
    func afterChannelFaults(_ plan: FaultPlan, link: ChannelLink, channel id: String) async {
        if plan.disconnect { scheduleDisconnect([link.central.address]) }
        if plan.closeChannel, channels.open[link.id] != nil {
            log.record(.channel, central: link.central.address, detail: "closing \(id) \(link) (a fault)")
            await channelClosed(link, channel: id, by: "a fault")
        }
    }

    /// A channel closed: `by` says who closed it.
    func channelClosed(_ link: ChannelLink, channel id: String, by: String) async {
        guard let open = channels.open.removeValue(forKey: link.id) else { return }
        updateChannelDeferral()
        open.socket.close()
        open.inbox.finish()
        open.outbox.finish()
        log.record(.channel, central: link.central.address, detail: "closed \(id) \(link) by \(by)")
        _ = try? await run(engine.handle(.channelClose(channel: id, link: link)), central: link.central)
    }

    /// How long a close waits behind what is queued before it (SDUs waiting for the central's credits) before the
    /// channel closes all the same: a central that gives no credits cannot keep a channel open the profile closed.
    static let closeDeadline: Duration = .seconds(5)

    /// Queues an effect's SDU, stream or close on each channel it names.
    func queue(_ item: ChannelOutgoing, channel id: String, links: [UInt64]) {
        if links.isEmpty {
            log.record(.note, detail: "channel \(id): no channel open to \(Self.describe(item))")
        }
        for linkID in links {
            guard let open = channels.open[linkID] else { continue }
            let link = open.link
            if case .dropped = open.outbox.yield(item) {
                log.record(
                    .error, central: link.central.address,
                    detail: "channel \(id) \(link): \(Self.describe(item)) dropped: \(Self.channelOutboxLimit) are waiting to go out")
            }
            if case .close = item {
                Task(executorPreference: loop) { [weak self] in
                    try? await Task.sleep(for: Self.closeDeadline)
                    await self?.closeOverdue(link, channel: id)
                }
            }
        }
    }

    /// A close still behind queued SDUs after ``closeDeadline``: the channel closes now.
    func closeOverdue(_ link: ChannelLink, channel id: String) async {
        guard channels.open[link.id] != nil else { return }
        log.record(
            .channel, central: link.central.address,
            detail: "closing \(id) \(link): what was queued before the close still waits for the central's credits after 5 s")
        await channelClosed(link, channel: id, by: "the profile")
    }

    static func describe(_ item: ChannelOutgoing) -> String {
        switch item {
        case .sdu(let bytes): "send \(bytes.count) bytes"
        case .stream(let source): "stream \(source)"
        case .close: "close"
        }
    }

    /// Sends one item of a channel's outbox, waiting for the central's credits as long as the channel is open.
    func channelSend(_ item: ChannelOutgoing, on link: ChannelLink, channel id: String, socket: L2CAPChannelSocket) async {
        // What was still queued when the channel closed goes nowhere (and asks no fault).
        guard channels.open[link.id] != nil else { return }
        switch item {
        case .sdu(let bytes):
            await sendSDU(bytes, on: link, channel: id, socket: socket, logged: true)
        case .stream(let source):
            await stream(source, on: link, channel: id, socket: socket)
        case .close:
            log.record(.channel, central: link.central.address, detail: "closing \(id) \(link)")
            await channelClosed(link, channel: id, by: "the profile")
        }
    }

    /// Sends one SDU through the channel faults (each SDU of a stream too); `logged`: an `sdu out` event for it (a
    /// stream logs its start and end instead). Whether it went out (or a fault dropped it), and whether the channel is
    /// still open after it.
    @discardableResult
    func sendSDU(
        _ bytes: [UInt8], on link: ChannelLink, channel id: String, socket: L2CAPChannelSocket, logged: Bool
    ) async -> (sent: Bool, open: Bool) {
        let central = link.central.address
        let plan = faultState.engine.plan(for: FaultOperation(.send, centrals: [central], channel: id))
        var value = bytes
        if !plan.isEmpty {
            record(plan, central: central, characteristic: nil)
            if plan.delayMilliseconds > 0 { try? await Task.sleep(for: .milliseconds(plan.delayMilliseconds)) }
            value = plan.mutated(bytes, limit: socket.sendMTU ?? bytes.count).bytes
        }
        if plan.drop {
            log.record(.note, central: central, detail: "channel \(id) \(link): an SDU of \(bytes.count) bytes dropped (a fault)")
        } else {
            switch await Self.deliver(value, on: socket) {
            case .sent:
                if logged || value != bytes {
                    log.record(
                        .channel, central: central, value: Array(value.prefix(Self.loggedSDUBytes)),
                        detail: "sdu out \(id) \(link), \(value.count) bytes"
                            + (value != bytes ? " (changed by faults from \(bytes.count))" : ""))
                }
            case .tooLarge:
                log.record(
                    .error, central: central,
                    detail:
                        "channel \(id) \(link): an SDU of \(value.count) bytes not sent: the central takes at most \(socket.sendMTU ?? 0)")
            case .full, .closed:
                return (false, false)
            }
        }
        await afterChannelFaults(plan, link: link, channel: id)
        return (true, channels.open[link.id] != nil)
    }

    /// Sends `bytes` as one SDU, waiting for room while the central gives no credits.
    static func deliver(_ bytes: [UInt8], on socket: L2CAPChannelSocket) async -> L2CAPChannelSocket.SendResult {
        while true {
            let result = socket.send(bytes)
            guard result == .full else { return result }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                socket.whenWritable { continuation.resume() }
            }
        }
    }

    /// Sends a stream in SDUs as large as the central takes, at the pace of its credits.
    func stream(_ source: StreamSource, on link: ChannelLink, channel id: String, socket: L2CAPChannelSocket) async {
        let started = ContinuousClock.now
        var bytes: [UInt8] = []
        switch source {
        case .pattern:
            break
        case .file(let name):
            let path = Self.resolve(name, besides: profile.file)
            guard let contents = await Self.readFile(path) else {
                log.record(
                    .error, central: link.central.address,
                    detail: "channel \(id) \(link): stream file \(path) cannot be read (or is over \(ProfileLimits.fileSize) bytes)")
                return
            }
            bytes = contents
        }
        let total: Int = if case .pattern(let count) = source { count } else { bytes.count }
        let size = max(1, socket.sendMTU ?? 23)
        log.record(
            .channel, central: link.central.address, detail: "stream \(id) \(link): \(source), \(total) bytes in SDUs of \(size)",
            progress: .init(done: 0, total: total))
        var offset = 0
        while offset < total {
            let end = min(total, offset + size)
            let chunk: [UInt8] =
                if case .pattern = source {
                    (offset..<end).map { UInt8(truncatingIfNeeded: $0) }
                } else {
                    Array(bytes[offset..<end])
                }
            let result = await sendSDU(chunk, on: link, channel: id, socket: socket, logged: false)
            if result.sent { offset = end }
            guard result.open else {
                log.record(
                    .channel, central: link.central.address,
                    detail: "stream \(id) \(link): stopped at \(offset) of \(total) bytes: the channel closed",
                    progress: .init(done: offset, total: total))
                return
            }
        }
        let elapsed = (ContinuousClock.now - started).components
        let milliseconds = elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000
        log.record(
            .channel, central: link.central.address,
            detail: "stream \(id) \(link): \(total) bytes sent in \(milliseconds) ms",
            progress: .init(done: total, total: total))
    }

    /// A stream file's path: as written when absolute, else beside the profile.
    static func resolve(_ name: String, besides profileFile: String) -> String {
        if name.hasPrefix("/") { return name }
        guard let slash = profileFile.lastIndex(of: "/") else { return name }
        return String(profileFile[...slash]) + name
    }

    /// Reads a whole file (at most ``ProfileLimits/fileSize`` bytes) off the loop.
    static func readFile(_ path: String) async -> [UInt8]? {
        await Task.detached { try? ProfileFiles.read(path, requireRegularFile: false).get() }.value
    }
}

/// A profile channel as the control API lists it: where it listens and what is open on it.
public struct ChannelSnapshot: Sendable, Equatable {
    public var id: String
    /// The PSM listened on; nil before the device started (`"any"`: the kernel's pick comes then).
    public var psm: UInt16?
    public var mtu: Int
    public var security: ChannelSecurity
    public var maximumOpen: Int
    /// The service holding the PSM characteristic.
    public var publishedIn: String?
    /// The refusal the kernel gives every request while a fault holds it (``FaultEngine/heldRefusal(forChannel:)``).
    public var refusing: LECreditBasedChannel.Refusal?
    public var open: [Open]

    public struct Open: Sendable, Equatable {
        /// The channel's number in the event log (`#3`).
        public var number: UInt64
        public var central: BluetoothAddress
        /// The largest SDU the central takes; nil once it closed.
        public var centralMTU: Int?
    }
}

extension Emulator {
    /// The profile's channels, with the PSM each listens on and the channels open on it.
    public func channelSnapshots() -> [ChannelSnapshot] {
        profile.channels.map { definition in
            let open = channels.open.values.filter { $0.channel == definition.id }.sorted { $0.link.id < $1.link.id }
            return ChannelSnapshot(
                id: definition.id, psm: channels.psms[definition.id], mtu: definition.mtu, security: definition.security,
                maximumOpen: definition.maximumOpen, publishedIn: definition.publish, refusing: channels.held[definition.id],
                open: open.map { .init(number: $0.link.id, central: $0.link.central.address, centralMTU: $0.socket.sendMTU) })
        }
    }

    /// Sends an SDU on every open channel of `id` (through the channel faults, after what the rules queued); returns
    /// how many it was queued on.
    public func sendSDU(channel id: String, value: [UInt8]) throws(ControlFailure) -> Int {
        guard profile.channel(id) != nil else {
            throw ControlFailure(.notFound, "unknown channel \"\(id)\"", details: ["known": profile.channels.map(\.id)])
        }
        let links = openChannels(id).map(\.link.id).sorted()
        guard !links.isEmpty else { throw ControlFailure(.conflict, "no channel \"\(id)\" is open") }
        log.record(.note, value: Array(value.prefix(Self.loggedSDUBytes)), detail: "control: send on \(id) (\(links.count) open)")
        queue(.sdu(value), channel: id, links: links)
        return links.count
    }
}
