import Bluetooth
import Replica

/// The work of ``BTSnoopExport/write(_:central:centralType:start:limits:)``: the set-up records, then the
/// conversation event by event, each event's records added whole or not at all (the size limit).
struct ExportSession {
    let replica: DeviceReplica
    let central: BluetoothAddress
    let centralType: AddressType
    let limits: BTSnoopExport.Limits
    let table: ExportTable
    let device: BluetoothAddress
    let deviceType: UInt8
    /// The MTU the central and the device agree on at each connection (23 with no exchange).
    let mtu: Int
    let exchangesMTU: Bool
    let start: Int64

    private(set) var bytes = BTSnoopFile.header(datalink: BTSnoopFile.h4Datalink)
    private(set) var frames = 0
    private(set) var notes: [String] = []

    /// The next record's time (µs since the Unix epoch).
    private var clock: Int64
    /// The records of the event being written, and how many.
    private var pending: [UInt8] = []
    private var pendingFrames = 0
    /// Open links, oldest first: the replica's connection number and its HCI connection handle.
    private var links: [(number: Int, handle: UInt16)] = []
    private var nextHandle: UInt16 = 0x0040
    private var discovered = false
    private var secured = false
    /// Refusals that show an authenticated level: written once the link is encrypted (see ``securityRefusals()``).
    private var afterEncryption: [ATTStep] = []
    private var valuesCut = 0
    private var skipped: [String: Int] = [:]

    /// ATT's longest attribute value.
    static let maximumValue = ATTMTU.maximumValueLength
    /// 9999-12-31, the last time btsnoop's readers print.
    static let latestStart: Int64 = 253_402_300_799_000_000
    /// Event times past this many seconds (about 31 years) are taken as unknown.
    static let latestTime = 1e9
    /// At most this many links open at once (a controller has a few): opening one more closes the oldest.
    static let maximumLinks = 16

    init(replica: DeviceReplica, central: BluetoothAddress, centralType: AddressType, start: Int64, limits: BTSnoopExport.Limits) {
        self.replica = replica
        self.central = central
        self.centralType = centralType
        self.limits = limits
        self.start = min(max(start, 0), Self.latestStart)
        clock = self.start
        table = ExportTable(replica)
        notes += table.notes
        if let address = replica.address {
            device = address
            deviceType = (replica.addressType ?? .public).rawValue
        } else {
            // A static random address (top bits 11) that says it is made up.
            device = BluetoothAddress("C0:00:00:00:00:01")!
            deviceType = AddressType.random.rawValue
            notes.append("the device's address is not known: written as the made-up static random address \(device)")
        }
        let recorded = replica.mtu.map { Int(min(max($0, ATTMTU.minimum.rawValue), ATTMTU.maximum.rawValue)) }
        // Notifications and write commands cannot be split: the link's MTU must hold the longest.
        var longest = 0
        for event in replica.conversation {
            switch event.kind {
            case .notification(_, let value, _), .write(_, let value, withResponse: false):
                longest = max(longest, min(value.count, Self.maximumValue))
            default: continue
            }
        }
        let needed = min(longest + 3, Int(ATTMTU.maximum.rawValue))
        mtu = max(recorded ?? Int(ATTMTU.minimum.rawValue), needed)
        exchangesMTU = recorded != nil || mtu > Int(ATTMTU.minimum.rawValue)
        if mtu > recorded ?? Int(ATTMTU.minimum.rawValue) {
            notes.append(
                "ATT MTU \(mtu) instead of the recorded \(recorded.map(String.init) ?? "none"): a notification or write command of \(longest) bytes needs it"
            )
        }
    }

    mutating func run() {
        if centralType.isRandom {
            command(HCIPacket.leSetRandomAddress(central))
            event(HCIPacket.event(0x0E, [1] + HCIPacket.le16(0x2005) + [0]))
        } else {
            command(HCIPacket.command(0x1009))
            event(HCIPacket.readBDAddrComplete(central))
        }
        advertise()
        guard commit() else { return finish(at: 0) }
        let reads = valueReads()
        let events = replica.conversation
        var index = 0
        while index < events.count {
            let consumed = write(events, at: index, reads: reads)
            guard commit() else { return finish(at: index) }
            index += consumed
        }
        if !discovered {
            _ = link(replica.conversation.first?.connection ?? 1, reads: reads)
            guard commit() else { return finish(at: events.count) }
        }
        finish(at: nil)
    }

    /// Notes what was left out; `stoppedAt` is the event the size limit stopped at.
    private mutating func finish(at stoppedAt: Int?) {
        if let stoppedAt {
            let place =
                stoppedAt < replica.conversation.count
                ? "at event \(stoppedAt + 1) of \(replica.conversation.count)" : "before the connection and discovery"
            notes.append("the capture stops \(place): the next records would take it past \(limits.maximumBytes) bytes")
        }
        if valuesCut > 0 { notes.append("\(valuesCut) values longer than ATT's \(Self.maximumValue) bytes were cut to it") }
        for (what, count) in skipped.sorted(by: { $0.key < $1.key }) { notes.append("\(count) \(what) left out") }
    }

    // MARK: Events

    /// Writes `events[index]` (and the error answering it, when the next event is that); returns how many events it used.
    private mutating func write(_ events: [DeviceReplica.Event], at index: Int, reads: [ATTStep]) -> Int {
        let event = events[index]
        moveClock(to: event.time)
        /// The next event when it is the device's error for this one's request on `handle`.
        func failure(_ handle: AttributeHandle) -> (request: ATTOpcode, code: ATTErrorCode)? {
            guard index + 1 < events.count, events[index + 1].connection == event.connection,
                case .error(handle, let request, let code) = events[index + 1].kind,
                [.writeRequest, .prepareWriteRequest, .executeWriteRequest].contains(request)
            else { return nil }
            return (request, code)
        }
        switch event.kind {
        case .connected:
            // A connection already open was lost unseen: it ends before the new one.
            disconnect(event.connection)
            _ = link(event.connection, reads: reads)
        case .disconnected:
            disconnect(event.connection)
        case .read(let handle, let offset, let value):
            let link = link(event.connection, reads: reads)
            att(link, ATTOperations.read(handle, offset: offset, value: cut(value), mtu: mtu))
        case .write(let handle, let value, let withResponse):
            let link = link(event.connection, reads: reads)
            let failed = withResponse ? failure(handle) : nil
            att(link, ATTOperations.write(handle, value: cut(value), withResponse: withResponse, mtu: mtu, failure: failed))
            if let failed {
                secure(link, after: failed.code)
                return 2
            }
        case .notification(let handle, let value, let indication):
            let link = link(event.connection, reads: reads)
            att(link, ATTOperations.notification(handle, value: cut(value), indication: indication, mtu: mtu))
        case .subscribe(let handle, let notify, let indicate):
            guard let configuration = table.configurations[handle] else {
                skipped["subscriptions to a characteristic without a client configuration descriptor", default: 0] += 1
                return 1
            }
            let link = link(event.connection, reads: reads)
            let failed = failure(configuration)
            att(
                link,
                ATTOperations.subscribe(configuration: configuration, notify: notify, indicate: indicate, mtu: mtu, failure: failed?.code))
            if let failed {
                secure(link, after: failed.code)
                return 2
            }
        case .error(let handle, let request, let code):
            guard let steps = ATTOperations.refused(request, handle: handle, code: code) else {
                skipped["errors to requests other than reads and writes of one attribute", default: 0] += 1
                return 1
            }
            let link = link(event.connection, reads: reads)
            att(link, steps)
            secure(link, after: code)
        }
        return 1
    }

    /// Pairs and encrypts after the first error that asks for it, as the phone would have.
    private mutating func secure(_ link: UInt16, after code: ATTErrorCode) {
        if code.asksForSecurity { secure(link) }
    }

    /// The HCI handle of connection `number`, connecting it first (and discovering on the first link).
    private mutating func link(_ number: Int, reads: [ATTStep]) -> UInt16 {
        if let open = links.first(where: { $0.number == number }) { return open.handle }
        if links.count >= Self.maximumLinks { disconnect(links[0].number) }
        // Handles 0x0001–0x0EFF, the next one not in use (at most maximumLinks are).
        var handle = nextHandle
        while links.contains(where: { $0.handle == handle }) { handle = handle >= 0x0EFF ? 0x0001 : handle + 1 }
        nextHandle = handle >= 0x0EFF ? 0x0001 : handle + 1
        links.append((number, handle))
        command(HCIPacket.leCreateConnection(peer: device, peerType: deviceType & 1, ownType: centralType.isRandom ? 1 : 0))
        event(HCIPacket.event(0x0F, [0, 1] + HCIPacket.le16(0x200D)))
        event(HCIPacket.leConnectionComplete(handle: handle, role: 0, peer: device, peerType: deviceType, enhanced: deviceType > 1))
        if exchangesMTU { att(handle, ATTOperations.exchangeMTU(mtu)) }
        if !discovered {
            discovered = true
            att(handle, GATTDiscovery.steps(table, mtu: mtu))
            let refusals = securityRefusals()
            att(handle, refusals.beforeEncryption)
            afterEncryption = refusals.afterEncryption
            // Pairing follows the first refusal for security the capture shows (one it can write), else discovery.
            let asks = replica.conversation.contains {
                guard case .error(let attribute, let request, let code) = $0.kind, code.asksForSecurity else { return false }
                return ATTOperations.refused(request, handle: attribute, code: code) != nil
            }
            if !asks { secure(handle) }
            att(handle, reads)
        }
        return handle
    }

    /// Disconnection Complete for connection `number`, when it is open.
    private mutating func disconnect(_ number: Int) {
        guard let index = links.firstIndex(where: { $0.number == number }) else { return }
        event(HCIPacket.disconnectionComplete(handle: links.remove(at: index).handle))
    }

    /// The pairing the recording saw (SMP on channel 6) and the encryption, once.
    private mutating func secure(_ link: UInt16) {
        guard !secured else { return }
        secured = true
        let seen = replica.security
        if seen.pairingSeen || seen.refusedWith != nil {
            // The phone asks for bonding, MITM and Secure Connections as a KeyboardDisplay device; keys 16 bytes.
            l2cap(link, channel: 6, [0x01, 0x04, 0x00, 0x0D, 16, 0x0D, 0x0F], fromCentral: true)
            if let io = seen.ioCapability {
                let auth: UInt8 =
                    (seen.bonding == true ? 0x01 : 0) | (seen.mitm == true ? 0x04 : 0) | (seen.secureConnections == true ? 0x08 : 0)
                l2cap(link, channel: 6, [0x02, io, 0x00, auth, 16, 0x0D, 0x0F], fromCentral: false)
            }
            if let reason = seen.refusedWith { l2cap(link, channel: 6, [0x05, reason], fromCentral: false) }
        }
        // An authenticated level was learnt on an encrypted link (a bonded device encrypts without pairing again).
        if seen.encrypted || !afterEncryption.isEmpty { event(HCIPacket.encryptionChange(handle: link)) }
        att(link, afterEncryption)
        afterEncryption = []
    }

    /// Refusals, right after discovery, that show the security the recording knows of each characteristic but its
    /// conversation may not (`gattemu relay` learns it while it reads the table, before the session): a read, write
    /// or subscription refused with Insufficient Encryption before the link is encrypted, and, for an authenticated
    /// level, with Insufficient Authentication once it is (what `gattemu import` reads as that level).
    private func securityRefusals() -> (beforeEncryption: [ATTStep], afterEncryption: [ATTStep]) {
        var before: [ATTStep] = []
        var after: [ATTStep] = []
        func refuse(_ level: CharacteristicSecurity.Level, _ steps: (ATTErrorCode) -> [ATTStep]?) {
            switch level {
            case .none: return
            case .encrypted: before += steps(.insufficientEncryption) ?? []
            case .authenticated, .secure: after += steps(.insufficientAuthentication) ?? []
            }
        }
        for characteristic in replica.services.flatMap(\.characteristics) {
            guard let value = characteristic.valueHandle, table.valueHandles.contains(value) else { continue }
            let security = characteristic.security
            refuse(security.read) { ATTOperations.refused(.readRequest, handle: value, code: $0) }
            refuse(security.write) { ATTOperations.refused(.writeRequest, handle: value, code: $0) }
            guard let configuration = table.configurations[value] else { continue }
            refuse(security.notify) {
                ATTOperations.subscribe(configuration: configuration, notify: true, indicate: false, mtu: mtu, failure: $0)
            }
            refuse(security.indicate) {
                ATTOperations.subscribe(configuration: configuration, notify: false, indicate: true, mtu: mtu, failure: $0)
            }
        }
        return (before, after)
    }

    /// Reads, right after discovery, of the values the conversation does not show: a characteristic's value
    /// neither read nor last notified as it is, a descriptor's value never read.
    private mutating func valueReads() -> [ATTStep] {
        var read: Set<AttributeHandle> = []
        var notified: [AttributeHandle: [UInt8]] = [:]
        for event in replica.conversation {
            switch event.kind {
            case .read(let handle, 0, _): read.insert(handle)
            case .notification(let handle, let value, _): notified[handle] = value
            default: continue
            }
        }
        var steps: [ATTStep] = []
        var known: Set<AttributeHandle> = []
        for service in table.services {
            for characteristic in service.characteristics {
                known.insert(characteristic.value)
                for descriptor in characteristic.descriptors { known.insert(descriptor.handle) }
            }
        }
        for (_, characteristic) in replica.characteristics {
            if let handle = characteristic.valueHandle, known.contains(handle), let value = characteristic.value, !read.contains(handle),
                notified[handle].map(Self.capped) != Self.capped(value)
            {
                steps += ATTOperations.read(handle, offset: 0, value: cut(value), mtu: mtu)
            }
            for descriptor in characteristic.descriptors where descriptor.uuid != .clientCharacteristicConfiguration {
                guard let handle = descriptor.handle, known.contains(handle), let value = descriptor.value, !read.contains(handle) else {
                    continue
                }
                steps += ATTOperations.read(handle, offset: 0, value: cut(value), mtu: mtu)
            }
        }
        return steps
    }

    private mutating func cut(_ value: [UInt8]) -> [UInt8] {
        guard value.count > Self.maximumValue else { return value }
        valuesCut += 1
        return Array(value.prefix(Self.maximumValue))
    }

    private static func capped(_ value: [UInt8]) -> [UInt8] { Array(value.prefix(maximumValue)) }

    // MARK: Advertising

    private mutating func advertise() {
        let reports: [(data: AdvertisingData?, legacyType: UInt8, extendedType: UInt16)] = [
            (replica.advertisingData, 0x00, 0x0003), (replica.scanResponse, 0x04, 0x000B),
        ]
        for report in reports {
            guard let data = report.data else { continue }
            if data.fitsLegacy {
                event(
                    HCIPacket.legacyAdvertisingReports([
                        (type: report.legacyType, addressType: deviceType, address: device, data: data.bytes, rssi: -60)
                    ]))
            } else {
                // Extended advertising: one report holds at most 229 bytes of data.
                var bytes = data.bytes
                if bytes.count > 229 {
                    bytes = Array(bytes.prefix(229))
                    notes.append("advertising data of \(data.bytes.count) bytes cut to the 229 one report holds")
                }
                event(
                    HCIPacket.extendedAdvertisingReport(
                        eventType: report.extendedType, addressType: deviceType, address: device, data: bytes))
            }
        }
    }

    // MARK: Records

    private mutating func moveClock(to time: Double?) {
        guard let time, time.isFinite, time >= 0, time <= Self.latestTime else { return }
        clock = max(clock, start + Int64(time * 1_000_000))
    }

    private mutating func record(type: UInt8, _ packet: [UInt8], received: Bool, commandOrEvent: Bool) {
        BTSnoopFile.appendRecord(
            [type] + packet, flags: BTSnoopFile.flags(received: received, commandOrEvent: commandOrEvent), timestamp: clock, to: &pending)
        pendingFrames += 1
        clock += 1
    }

    private mutating func command(_ packet: [UInt8]) { record(type: 0x01, packet, received: false, commandOrEvent: true) }
    private mutating func event(_ packet: [UInt8]) { record(type: 0x04, packet, received: true, commandOrEvent: true) }

    private mutating func l2cap(_ link: UInt16, channel: UInt16, _ payload: [UInt8], fromCentral: Bool) {
        for fragment in HCIPacket.acl(handle: link, HCIPacket.l2cap(channel: channel, payload)) {
            record(type: 0x02, fragment, received: !fromCentral, commandOrEvent: false)
        }
    }

    private mutating func att(_ link: UInt16, _ steps: [ATTStep]) {
        for step in steps { l2cap(link, channel: 4, step.pdu, fromCentral: step.fromCentral) }
    }

    /// Adds the pending records to the file unless they would take it past the limit; false when they would.
    private mutating func commit() -> Bool {
        defer {
            pending.removeAll(keepingCapacity: true)
            pendingFrames = 0
        }
        guard bytes.count + pending.count <= limits.maximumBytes else { return false }
        bytes += pending
        frames += pendingFrames
        return true
    }
}
