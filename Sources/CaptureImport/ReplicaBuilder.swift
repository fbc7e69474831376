import Bluetooth
import Capture
import Replica

/// The work of ``CaptureImport/replica(of:in:source:)``: three linear passes over the chosen device's part
/// of the trace — discovery (what the GATT table is), usage (which handles the central touched, how), and
/// the conversation in frame order — then the table, values, security and notes.
struct ReplicaBuilder {
    let trace: CaptureTrace
    let choice: CaptureImport.Choice
    var replica: DeviceReplica
    /// Capture connection id → the replica's connection number (from 1).
    let numbers: [Int: Int]
    /// Microseconds of the capture's first record: times are seconds after it.
    let origin: Int64?

    init(trace: CaptureTrace, choice: CaptureImport.Choice, source: String) {
        self.trace = trace
        self.choice = choice
        replica = DeviceReplica(source: "capture " + source)
        var numbers: [Int: Int] = [:]
        for (index, id) in choice.connections.enumerated() { numbers[id] = index + 1 }
        self.numbers = numbers
        origin = trace.statistics.firstTimestamp
    }

    // MARK: Tables filled by the passes

    struct ServiceEntry {
        var uuid: BluetoothUUID
        var primary: Bool
        var end: AttributeHandle
        var frame: Int
    }

    struct HandleUse {
        var reads = 0
        var writes = 0
        var commands = 0
        var notifications = 0
        var indications = 0
        /// Every write was two bytes 0x0000–0x0003 (the shape of a client configuration write).
        var onlyConfigurationShaped = true
        var firstFrame: Int?
    }

    var services: [AttributeHandle: ServiceEntry] = [:]
    var declarations: [AttributeHandle: (declaration: ATTMessage.CharacteristicDeclaration, frame: Int)] = [:]
    var includes: [AttributeHandle: ATTMessage.IncludeDeclaration] = [:]
    /// The value handles of the discovered characteristics (filled by ``discover()``).
    var valueHandles: Set<AttributeHandle> = []
    /// Attribute types from Find Information.
    var attributeTypes: [AttributeHandle: BluetoothUUID] = [:]
    var uses: [AttributeHandle: HandleUse] = [:]
    /// Client configuration handle → the value handle it configures.
    var configurations: [AttributeHandle: AttributeHandle] = [:]
    /// Last value read per handle, with where.
    var readValues: [AttributeHandle: (value: [UInt8], frame: Int, time: Double?)] = [:]
    var notifiedValues: [AttributeHandle: (value: [UInt8], frame: Int, time: Double?)] = [:]
    var security: [AttributeHandle: CharacteristicSecurity] = [:]
    var skippedReadMultiple = 0
    var unanswered = 0
    var deviceRequests: [ATTOpcode: Int] = [:]

    mutating func build() -> DeviceReplica {
        if let address = choice.address {
            replica.address = address.address
            replica.addressType = address.type
        }
        let transactions = transactionsByRequest()
        discover()
        survey()
        converse(transactions)
        buildTable()
        observeSecurity()
        recordChannels()
        buildAdvertisement()
        replica.name =
            deviceName ?? (replica.advertisingData?.localName ?? replica.scanResponse?.localName).flatMap(CaptureImport.displayName)
            ?? choice.names.first
        addNotes()
        return replica
    }

    /// The SDUs of the LE credit-based channels the central opened, per PSM and connection, in order. A channel whose
    /// direction is unknown (no role in the capture) takes the sender of its first SDU as the central.
    mutating func recordChannels() {
        var recordings: [UInt16: DeviceReplica.ChannelRecording] = [:]
        var order: [UInt16] = []
        var sessions: [UInt16: [Int: Int]] = [:]
        for sdu in trace.channelSDUs where numbers[sdu.connection] != nil {
            let fromCentral: Bool
            switch sdu.direction {
            case .centralToPeripheral: fromCentral = true
            case .peripheralToCentral: fromCentral = false
            case .unknown: fromCentral = sdu.sender != .controllerToHost
            }
            if recordings[sdu.psm] == nil {
                recordings[sdu.psm] = DeviceReplica.ChannelRecording(psm: sdu.psm)
                order.append(sdu.psm)
            }
            let session: Int
            if let known = sessions[sdu.psm]?[sdu.connection] {
                session = known
            } else {
                session = recordings[sdu.psm]!.sessions.count
                recordings[sdu.psm]!.sessions.append([])
                sessions[sdu.psm, default: [:]][sdu.connection] = session
            }
            recordings[sdu.psm]!.sessions[session].append(
                .init(fromCentral: fromCentral, value: sdu.value, frame: sdu.frame, time: time(sdu.timestamp)))
        }
        replica.channels = order.compactMap { recordings[$0] }
    }

    // MARK: Pass 1: discovery

    struct RequestKey: Hashable {
        var connection: Int
        var frame: Int
        var opcode: UInt8
    }

    /// The answered or failed transactions of the chosen connections, by their request PDU.
    func transactionsByRequest() -> [RequestKey: Int] {
        var index: [RequestKey: Int] = [:]
        for (position, transaction) in trace.attTransactions.enumerated() where numbers[transaction.connection] != nil {
            index[
                RequestKey(
                    connection: transaction.connection, frame: transaction.request.frame, opcode: transaction.request.opcode.rawValue)] =
                position
        }
        return index
    }

    /// Whether the central (the capturing host) sent `pdu`. Unknown directions: the client is taken as central.
    static func fromCentral(_ pdu: ATTPDU) -> Bool {
        switch pdu.direction {
        case .centralToPeripheral: true
        case .peripheralToCentral: false
        case .unknown: [.request, .command].contains(pdu.opcode.kind)
        }
    }

    mutating func discover() {
        for transaction in trace.attTransactions where numbers[transaction.connection] != nil && transaction.outcome == .answered {
            guard Self.fromCentral(transaction.request), let response = transaction.response?.message else { continue }
            let frame = transaction.request.frame
            switch (transaction.request.message, response) {
            case (.readByGroupTypeRequest(_, let type), .readByGroupTypeResponse(let groups))
            where type == .primaryService || type == .secondaryService:
                for group in groups {
                    guard let uuid = group.uuid, group.endGroupHandle >= group.handle else { continue }
                    services[group.handle] = ServiceEntry(
                        uuid: uuid, primary: type == .primaryService, end: group.endGroupHandle, frame: frame)
                }
            case (.findByTypeValueRequest(_, let type, let value), .findByTypeValueResponse(let ranges))
            where type == .primaryService || type == .secondaryService:
                guard let uuid = BluetoothUUID(littleEndian: value) else { continue }
                for range in ranges where range.end >= range.start {
                    services[range.start] = ServiceEntry(uuid: uuid, primary: type == .primaryService, end: range.end, frame: frame)
                }
            case (.readByTypeRequest(_, .characteristic), _):
                for declaration in transaction.characteristicDeclarations where declaration.valueHandle > declaration.handle {
                    declarations[declaration.handle] = (declaration, frame)
                }
            case (.readByTypeRequest(_, .include), _):
                for include in transaction.includeDeclarations { includes[include.handle] = include }
            case (.findInformationRequest, .findInformationResponse(let items)):
                for item in items { attributeTypes[item.handle] = item.uuid }
            default:
                continue
            }
        }
        valueHandles = Set(declarations.values.map(\.declaration.valueHandle))
    }

    // MARK: Pass 2: which handles the central used, and how

    mutating func survey() {
        for pdu in trace.attPDUs where numbers[pdu.connection] != nil {
            let central = Self.fromCentral(pdu)
            switch pdu.message {
            case .readRequest(let handle) where central, .readBlobRequest(let handle, _) where central:
                use(handle, pdu) { $0.reads += 1 }
            case .readMultipleVariableRequest(let handles) where central:
                for handle in handles { use(handle, pdu) { $0.reads += 1 } }
            case .writeRequest(let handle, let value) where central, .prepareWriteRequest(let handle, _, let value) where central:
                use(handle, pdu) {
                    $0.writes += 1
                    if !Self.isConfigurationShaped(value) { $0.onlyConfigurationShaped = false }
                }
            case .writeCommand(let handle, let value) where central, .signedWriteCommand(let handle, let value) where central:
                use(handle, pdu) {
                    $0.commands += 1
                    if !Self.isConfigurationShaped(value) { $0.onlyConfigurationShaped = false }
                }
            case .handleValueNotification(let handle, _) where !central:
                use(handle, pdu) { $0.notifications += 1 }
            case .handleValueIndication(let handle, _) where !central:
                use(handle, pdu) { $0.indications += 1 }
            case .multipleHandleValueNotification(let values) where !central:
                for value in values { use(value.handle, pdu) { $0.notifications += 1 } }
            default:
                if !central, pdu.opcode.kind == .request || pdu.opcode.kind == .command { deviceRequests[pdu.opcode, default: 0] += 1 }
            }
        }
        // Client configurations: discovered 0x2902 descriptors belong to the characteristic before them;
        // undiscovered handles written only with configuration values, just after a notified handle, are one too.
        // Both in handle order, walked together: each configuration's owner is the last value handle before it.
        let owners = valueHandles.sorted()
        var next = 0
        for handle in attributeTypes.filter({ $0.value == .clientCharacteristicConfiguration }).keys.sorted() {
            while next < owners.count, owners[next] < handle { next += 1 }
            if next > 0 { configurations[handle] = owners[next - 1] }
        }
        for (handle, use) in uses where configurations[handle] == nil && !isKnownAttribute(handle) && handle > 1 {
            let previous = AttributeHandle(rawValue: handle.rawValue - 1)
            guard use.writes + use.commands > 0, use.onlyConfigurationShaped, use.reads == 0, use.notifications + use.indications == 0,
                let before = uses[previous], before.notifications + before.indications > 0
            else { continue }
            configurations[handle] = previous
        }
    }

    mutating func use(_ handle: AttributeHandle, _ pdu: ATTPDU, _ update: (inout HandleUse) -> Void) {
        var entry = uses[handle] ?? HandleUse()
        if entry.firstFrame == nil { entry.firstFrame = pdu.frame }
        update(&entry)
        uses[handle] = entry
    }

    static func isConfigurationShaped(_ value: [UInt8]) -> Bool { value.count == 2 && value[1] == 0 && value[0] <= 3 }

    /// A handle discovery named: a service or include declaration, a characteristic declaration or value,
    /// or a descriptor Find Information listed.
    func isKnownAttribute(_ handle: AttributeHandle) -> Bool {
        services[handle] != nil || includes[handle] != nil || declarations[handle] != nil || attributeTypes[handle] != nil
            || valueHandles.contains(handle)
    }

    // MARK: Pass 3: the conversation

    struct PendingRead {
        var handle: AttributeHandle
        var value: [UInt8]
        var event: DeviceReplica.Event
    }

    struct PreparedWrite {
        var handle: AttributeHandle
        var value: [UInt8]
        var event: DeviceReplica.Event
    }

    mutating func converse(_ transactions: [RequestKey: Int]) {
        var markers: [(frame: Int, connection: Int, event: DeviceReplica.Event)] = []
        for id in choice.connections {
            guard let connection = trace.connection(id), let number = numbers[id] else { continue }
            markers.append(
                (
                    connection.opened.frame, id,
                    event(.connected(nil), frame: connection.opened.frame, timestamp: connection.opened.timestamp, number)
                ))
            if let closed = connection.closed {
                markers.append((closed.frame, id, event(.disconnected, frame: closed.frame, timestamp: closed.timestamp, number)))
            }
        }
        markers.sort { $0.frame < $1.frame }
        var nextMarker = 0
        var pendingReads: [Int: PendingRead] = [:]
        var prepared: [Int: [PreparedWrite]] = [:]

        func flush(
            _ connection: Int, into conversation: inout [DeviceReplica.Event],
            readValues: inout [AttributeHandle: (value: [UInt8], frame: Int, time: Double?)]
        ) {
            guard let read = pendingReads.removeValue(forKey: connection) else { return }
            conversation.append(read.event)
            readValues[read.handle] = (read.value, read.event.frame ?? 0, read.event.time)
        }

        for pdu in trace.attPDUs {
            guard let number = numbers[pdu.connection] else { continue }
            // `<=`: a link made up from ACL data opens in the frame of its first PDU, which comes after it.
            while nextMarker < markers.count, markers[nextMarker].frame <= pdu.firstFrame {
                if case .disconnected = markers[nextMarker].event.kind {
                    flush(markers[nextMarker].connection, into: &replica.conversation, readValues: &readValues)
                    prepared[markers[nextMarker].connection] = nil
                }
                replica.conversation.append(markers[nextMarker].event)
                nextMarker += 1
            }
            let central = Self.fromCentral(pdu)
            let message = pdu.message
            let here = event(.disconnected, frame: pdu.frame, timestamp: pdu.timestamp, number)
            // Anything the central does but the next part of a long read ends that read; so does a notification.
            let continuesRead = { if case .readBlobRequest = message { central } else { false } }()
            if !continuesRead && (central || pdu.opcode.kind == .notification || pdu.opcode.kind == .indication) {
                flush(pdu.connection, into: &replica.conversation, readValues: &readValues)
            }
            let transaction = transactions[RequestKey(connection: pdu.connection, frame: pdu.frame, opcode: pdu.opcode.rawValue)].map {
                trace.attTransactions[$0]
            }
            if central, pdu.opcode.kind == .request {
                if case .unanswered(let why)? = transaction?.outcome, why != .disconnected { unanswered += 1 }
                if case .error(let code)? = transaction?.outcome, case .errorResponse(_, let handle, _)? = transaction?.response?.message {
                    // Discovery ends with errors (attribute not found); only operations on attributes are the device's answers.
                    guard Self.attributeOperations.contains(pdu.opcode) else { continue }
                    noteError(code, handle: handle, request: pdu.opcode, pdu: pdu)
                    flush(pdu.connection, into: &replica.conversation, readValues: &readValues)
                    // A write the device refused (not for security: the central writes again once paired) is the
                    // write and then its refusal, so that a replay refuses that write.
                    if !code.asksForSecurity, case .writeRequest(let written, let value) = message, written == handle,
                        configurations[handle] == nil
                    {
                        replica.conversation.append(writeEvent(handle, value, withResponse: true, at: here))
                    }
                    var failed = here
                    failed.kind = .error(handle: handle, request: pdu.opcode, code: code)
                    replica.conversation.append(failed)
                    if pdu.opcode == .prepareWriteRequest || pdu.opcode == .executeWriteRequest { prepared[pdu.connection] = nil }
                    continue
                }
            }
            switch message {
            case .exchangeMTURequest(let client):
                if case .exchangeMTUResponse(let server)? = transaction?.response?.message {
                    replica.mtu = min(max(min(client, server), ATTMTU.minimum.rawValue), ATTMTU.maximum.rawValue)
                }
            case .readRequest(let handle) where central:
                guard case .readResponse(let value)? = transaction?.response?.message else { continue }
                var read = here
                read.kind = .read(handle: handle, offset: 0, value: value)
                pendingReads[pdu.connection] = PendingRead(handle: handle, value: value, event: read)
            case .readBlobRequest(let handle, let offset) where central:
                guard case .readBlobResponse(let value)? = transaction?.response?.message else { continue }
                if var pending = pendingReads[pdu.connection], pending.handle == handle, Int(offset) == pending.value.count,
                    pending.value.count + value.count <= ATTMTU.maximumValueLength
                {
                    pending.value += value
                    pending.event.kind = .read(handle: handle, offset: 0, value: pending.value)
                    pendingReads[pdu.connection] = pending
                } else {
                    flush(pdu.connection, into: &replica.conversation, readValues: &readValues)
                    var read = here
                    read.kind = .read(handle: handle, offset: Int(offset), value: value)
                    if offset == 0 {
                        pendingReads[pdu.connection] = PendingRead(handle: handle, value: value, event: read)
                    } else {
                        replica.conversation.append(read)
                    }
                }
            case .readByTypeRequest(_, let type)
            where central && ![BluetoothUUID.characteristic, .include, .primaryService, .secondaryService].contains(type):
                guard case .readByTypeResponse(let entries)? = transaction?.response?.message else { continue }
                for entry in entries {
                    var read = here
                    read.kind = .read(handle: entry.handle, offset: 0, value: entry.value)
                    replica.conversation.append(read)
                    readValues[entry.handle] = (entry.value, pdu.frame, here.time)
                    if type == .deviceName { gapName = CaptureImport.displayName(String(decoding: entry.value, as: UTF8.self)) }
                }
            case .readMultipleVariableRequest(let handles) where central:
                guard case .readMultipleVariableResponse(let values)? = transaction?.response?.message else { continue }
                for (handle, value) in zip(handles, values) {
                    var read = here
                    read.kind = .read(handle: handle, offset: 0, value: value)
                    replica.conversation.append(read)
                    readValues[handle] = (value, pdu.frame, here.time)
                }
            case .readMultipleRequest where central:
                if transaction?.outcome == .answered { skippedReadMultiple += 1 }
            case .writeRequest(let handle, let value) where central:
                replica.conversation.append(writeEvent(handle, value, withResponse: true, at: here))
            case .writeCommand(let handle, let value) where central, .signedWriteCommand(let handle, let value) where central:
                replica.conversation.append(writeEvent(handle, value, withResponse: false, at: here))
            case .prepareWriteRequest(let handle, let offset, let value) where central:
                var queue = prepared[pdu.connection] ?? []
                if let index = queue.firstIndex(where: { $0.handle == handle }) {
                    queue[index].value = Self.placed(value, at: Int(offset), in: queue[index].value)
                } else if queue.count < 64 {
                    queue.append(PreparedWrite(handle: handle, value: Self.placed(value, at: Int(offset), in: []), event: here))
                }
                prepared[pdu.connection] = queue
            case .executeWriteRequest(let flags) where central:
                let queue = prepared.removeValue(forKey: pdu.connection) ?? []
                guard flags == 1 else { continue }
                for write in queue {
                    var at = here
                    at.frame = write.event.frame
                    at.time = write.event.time
                    replica.conversation.append(writeEvent(write.handle, write.value, withResponse: true, at: at))
                }
            case .handleValueNotification(let handle, let value) where !central:
                notified(handle, value, indication: false, at: here)
            case .handleValueIndication(let handle, let value) where !central:
                notified(handle, value, indication: true, at: here)
            case .multipleHandleValueNotification(let values) where !central:
                for value in values { notified(value.handle, value.value, indication: false, at: here) }
            default:
                continue
            }
        }
        for id in choice.connections { flush(id, into: &replica.conversation, readValues: &readValues) }
        replica.conversation += markers[nextMarker...].map(\.event)
    }

    var gapName: String?

    /// Requests on one attribute whose errors are part of the device's behaviour.
    static let attributeOperations: Set<ATTOpcode> = [
        .readRequest, .readBlobRequest, .writeRequest, .prepareWriteRequest, .executeWriteRequest,
    ]

    mutating func notified(_ handle: AttributeHandle, _ value: [UInt8], indication: Bool, at here: DeviceReplica.Event) {
        var event = here
        event.kind = .notification(handle: handle, value: value, indication: indication)
        replica.conversation.append(event)
        notifiedValues[handle] = (value, here.frame ?? 0, here.time)
    }

    /// A write, or the subscription it is when it goes to a client configuration.
    func writeEvent(_ handle: AttributeHandle, _ value: [UInt8], withResponse: Bool, at here: DeviceReplica.Event) -> DeviceReplica.Event {
        var event = here
        if let owner = configurations[handle] {
            let bits = value.first ?? 0
            event.kind = .subscribe(handle: owner, notify: bits & 1 != 0, indicate: bits & 2 != 0)
        } else {
            event.kind = .write(handle: handle, value: value, withResponse: withResponse)
        }
        return event
    }

    /// `value` written at `offset` into `existing` (a prepared write's part), bounded by ATT's 512 bytes.
    static func placed(_ value: [UInt8], at offset: Int, in existing: [UInt8]) -> [UInt8] {
        guard offset <= ATTMTU.maximumValueLength else { return existing }
        var result = existing
        if result.count < offset { result += [UInt8](repeating: 0, count: offset - result.count) }
        let end = min(offset + value.count, ATTMTU.maximumValueLength)
        let replaced = min(end, result.count) - offset
        if replaced > 0 { result.replaceSubrange(offset..<(offset + replaced), with: value.prefix(replaced)) }
        if end > result.count { result += value[replaced..<(end - offset)] }
        return result
    }

    mutating func noteError(_ code: ATTErrorCode, handle: AttributeHandle, request: ATTOpcode, pdu: ATTPDU) {
        guard code == .insufficientAuthentication || code == .insufficientEncryption || code == .insufficientEncryptionKeySize else {
            return
        }
        // Unencrypted, "insufficient authentication" means "pair first"; on an encrypted link it asks for MITM protection.
        let encrypted = isEncrypted(pdu.connection, before: pdu.frame)
        let level: CharacteristicSecurity.Level = code == .insufficientAuthentication && encrypted ? .authenticated : .encrypted
        if let owner = configurations[handle] {
            var entry = security[owner] ?? CharacteristicSecurity()
            let bits: UInt8 = { if case .writeRequest(_, let value) = pdu.message { value.first ?? 1 } else { 1 } }()
            if bits & 2 != 0 { entry.indicate = max(entry.indicate, level) } else { entry.notify = max(entry.notify, level) }
            security[owner] = entry
            return
        }
        var entry = security[handle] ?? CharacteristicSecurity()
        switch request {
        case .readRequest, .readBlobRequest, .readByTypeRequest, .readMultipleRequest, .readMultipleVariableRequest:
            entry.read = max(entry.read, level)
        case .writeRequest, .prepareWriteRequest, .executeWriteRequest:
            entry.write = max(entry.write, level)
        default:
            return
        }
        security[handle] = entry
    }

    func isEncrypted(_ connection: Int, before frame: Int) -> Bool {
        guard let changes = trace.connection(connection)?.encryption else { return false }
        var on = false
        for change in changes where change.moment.frame < frame && change.status == .success {
            if let enabled = change.enabled { on = enabled != 0 }
        }
        return on
    }

    // MARK: The table

    /// The GAP Device Name, when the central read it.
    var deviceName: String?

    mutating func buildTable() {
        let starts = services.keys.sorted()
        // Include declarations in handle order, each service's found by binary search: a capture may have thousands of both.
        let sortedIncludes = includes.values.sorted { $0.handle < $1.handle }
        var built: [DeviceReplica.Service] = []
        for start in starts {
            let entry = services[start]!
            var service = DeviceReplica.Service(uuid: entry.uuid, isPrimary: entry.primary, handle: start, endHandle: entry.end)
            service.provenance = "discovered in frame \(entry.frame)"
            var low = 0
            var high = sortedIncludes.count
            while low < high {
                let middle = (low + high) / 2
                if sortedIncludes[middle].handle > start { high = middle } else { low = middle + 1 }
            }
            service.includes = sortedIncludes[low...].prefix { $0.handle <= entry.end }.map(\.serviceRange.start)
            built.append(service)
        }
        let sortedDeclarations = declarations.values.sorted { $0.declaration.handle < $1.declaration.handle }
        var orphans: [DeviceReplica.Characteristic] = []
        // The services begun before the declaration, latest on top; those ended before it are popped for good (declarations
        // come in handle order), so the top is the last service holding it (as a search of every service would find).
        var begun: [Int] = []
        var nextService = 0
        for (position, item) in sortedDeclarations.enumerated() {
            let declaration = item.declaration
            while nextService < built.count, (built[nextService].handle ?? 0) < declaration.handle {
                begun.append(nextService)
                nextService += 1
            }
            while let top = begun.last, (built[top].endHandle ?? 0) < declaration.handle { begun.removeLast() }
            let serviceIndex = begun.last
            let serviceEnd = serviceIndex.flatMap { built[$0].endHandle } ?? 0xFFFF
            let nextDeclaration =
                position + 1 < sortedDeclarations.count
                ? AttributeHandle(rawValue: sortedDeclarations[position + 1].declaration.handle.rawValue - 1) : 0xFFFF
            let end = min(serviceEnd, nextDeclaration)
            var characteristic = DeviceReplica.Characteristic(
                uuid: declaration.uuid, properties: declaration.properties,
                declarationHandle: declaration.handle, valueHandle: declaration.valueHandle)
            characteristic.provenance = "declared in frame \(item.frame)"
            if declaration.valueHandle < end {
                for raw in (declaration.valueHandle.rawValue + 1)...end.rawValue {
                    let handle = AttributeHandle(rawValue: raw)
                    guard let type = attributeTypes[handle] else { continue }
                    var descriptor = DeviceReplica.Descriptor(uuid: type, handle: handle)
                    if type != .clientCharacteristicConfiguration { descriptor.value = readValues[handle]?.value }
                    characteristic.descriptors.append(descriptor)
                }
            }
            fillValue(&characteristic)
            if characteristic.uuid == .deviceName, let value = characteristic.value {
                deviceName = CaptureImport.displayName(String(decoding: value, as: UTF8.self))
            }
            if let serviceIndex { built[serviceIndex].characteristics.append(characteristic) } else { orphans.append(characteristic) }
        }
        if deviceName == nil { deviceName = gapName }
        orphans += inferredCharacteristics()
        if !orphans.isEmpty {
            var placeholder = DeviceReplica.Service(uuid: Self.placeholderUUID(0xFFFF))
            placeholder.provenance = "placeholder: characteristics used without discovery in the capture"
            placeholder.characteristics = orphans
            built.append(placeholder)
        }
        replica.services = built
    }

    /// Characteristics for handles the central used that discovery never named (a phone using its GATT cache).
    mutating func inferredCharacteristics() -> [DeviceReplica.Characteristic] {
        var result: [DeviceReplica.Characteristic] = []
        let ownedConfigurations = Dictionary(configurations.map { ($1, $0) }, uniquingKeysWith: min)
        for handle in uses.keys.sorted() where !isKnownAttribute(handle) && configurations[handle] == nil {
            let use = uses[handle]!
            var properties: CharacteristicProperties = []
            if use.reads > 0 { properties.insert(.read) }
            if use.writes > 0 { properties.insert(.write) }
            if use.commands > 0 { properties.insert(.writeWithoutResponse) }
            if use.notifications > 0 { properties.insert(.notify) }
            if use.indications > 0 { properties.insert(.indicate) }
            var characteristic = DeviceReplica.Characteristic(
                uuid: Self.placeholderUUID(handle), properties: properties, valueHandle: handle)
            characteristic.provenance =
                "inferred from handle \(handle) used from frame \(use.firstFrame ?? 0) (not discovered: placeholder UUID)"
            if let configuration = ownedConfigurations[handle] {
                characteristic.descriptors.append(DeviceReplica.Descriptor(uuid: .clientCharacteristicConfiguration, handle: configuration))
            }
            fillValue(&characteristic)
            result.append(characteristic)
            inferredCount += 1
        }
        return result
    }

    var inferredCount = 0

    /// A made-up 128-bit UUID naming an undiscovered handle: `0000HHHH-0000-4000-8000-67617474656d`
    /// (the last group spells "gattem").
    static func placeholderUUID(_ handle: AttributeHandle) -> BluetoothUUID {
        BluetoothUUID(bytes: [
            0, 0, UInt8(handle.rawValue >> 8), UInt8(handle.rawValue & 0xFF), 0, 0, 0x40, 0, 0x80, 0, 0x67, 0x61, 0x74, 0x74, 0x65, 0x6D,
        ])!
    }

    mutating func fillValue(_ characteristic: inout DeviceReplica.Characteristic) {
        guard let handle = characteristic.valueHandle else { return }
        if let read = readValues[handle] {
            characteristic.value = read.value
            characteristic.valueProvenance = "read in " + Self.at(frame: read.frame, time: read.time)
        } else if let notified = notifiedValues[handle] {
            characteristic.value = notified.value
            characteristic.valueProvenance = "last notified in " + Self.at(frame: notified.frame, time: notified.time)
        }
        if let found = security[handle] { characteristic.security = found }
    }

    // MARK: Security

    mutating func observeSecurity() {
        for pdu in trace.smpPDUs where numbers[pdu.connection] != nil {
            let fromDevice = pdu.direction == .peripheralToCentral
            switch pdu.message {
            case .pairingRequest:
                replica.security.pairingSeen = true
            case .pairingResponse(let features) where fromDevice || pdu.direction == .unknown:
                replica.security.pairingSeen = true
                replica.security.ioCapability = features.ioCapability.rawValue
                replica.security.bonding = features.authRequirements.contains(.bonding)
                replica.security.mitm = features.authRequirements.contains(.mitm)
                replica.security.secureConnections = features.authRequirements.contains(.secureConnections)
            case .pairingFailed(let reason) where fromDevice:
                replica.security.refusedWith = reason.rawValue
            default:
                continue
            }
        }
        for id in choice.connections {
            if trace.connection(id)?.encryption.contains(where: { $0.status == .success && ($0.enabled ?? 0) != 0 }) == true {
                replica.security.encrypted = true
            }
        }
    }

    // MARK: Advertisement

    mutating func buildAdvertisement() {
        guard let address = choice.address else { return }
        var addresses: Set<BluetoothAddress> = [address.address]
        for id in choice.connections {
            if let rpa = trace.connection(id)?.peerResolvablePrivateAddress { addresses.insert(rpa) }
        }
        let firstConnection = choice.connections.compactMap { trace.connection($0)?.opened.frame }.min() ?? Int.max
        var data: AdvertisingReport?
        var response: AdvertisingReport?
        var total = 0
        /// The last report before the first connection (what the phone saw when it connected); failing that, the first after.
        func better(_ report: AdvertisingReport, than current: AdvertisingReport?) -> Bool {
            guard let current else { return true }
            let before = report.frame < firstConnection
            let currentBefore = current.frame < firstConnection
            if before != currentBefore { return before }
            return before ? report.frame > current.frame : report.frame < current.frame
        }
        // Each advertiser kept its own last report before it was first connected to, failing that its first after
        // (Capture's ``Advertiser``, in memory bounded whatever the number of reports); the best of those.
        for advertiser in trace.advertisers where addresses.contains(advertiser.address.address) {
            total += advertiser.reportCount
            if let report = advertiser.scanResponse, better(report, than: response) { response = report }
            if let report = advertiser.advertisingData, better(report, than: data) { data = report }
        }
        replica.advertisingData = data?.advertisingData
        replica.scanResponse = response?.advertisingData
        replica.secondaryChannel = data?.secondaryChannel
        var provenance: [String] = []
        if let data { provenance.append("advertising data from the report in " + Self.at(frame: data.frame, time: time(data.timestamp))) }
        if let response { provenance.append("scan response from " + Self.at(frame: response.frame, time: time(response.timestamp))) }
        if !provenance.isEmpty {
            replica.advertisingProvenance = provenance.joined(separator: "; ") + " (\(total) reports from this device in the capture)"
        }
    }

    // MARK: Notes

    mutating func addNotes() {
        var notes: [String] = []
        let discovered = !services.isEmpty || !declarations.isEmpty
        if !discovered && inferredCount > 0 {
            notes.append(
                "no service discovery in the capture (the phone used its GATT cache): \(inferredCount) characteristics inferred from the handles it used, "
                    + "with placeholder UUIDs 0000HHHH-0000-4000-8000-67617474656d — an app that looks characteristics up by UUID will not find them; "
                    + "edit the UUIDs, or capture again after clearing the phone's Bluetooth cache (or unpairing) so discovery runs")
        } else if inferredCount > 0 {
            notes.append(
                "\(inferredCount) handles were used outside the discovered table: inferred as characteristics with placeholder UUIDs (service \"placeholder\")"
            )
        }
        if choice.address == nil {
            notes.append("the peer's address is unknown (the capture has no connection event for it): no advertisement recorded")
        } else if replica.advertisingData == nil && replica.scanResponse == nil {
            if trace.notes.contains(.noAdvertisingReports) {
                notes.append(
                    "no advertising reports in the capture (the phone was not scanning while it ran): the advertisement is made up from the name and services"
                )
            } else {
                notes.append(
                    "no advertising report from this device (it may have advertised under another private address): the advertisement is made up from the name and services"
                )
            }
        } else if replica.scanResponse == nil {
            notes.append("no scan response from this device in the capture (the phone scanned passively, or the device sends none)")
        }
        for note in trace.notes {
            switch note {
            case .attOnlyExport, .truncatedRecords, .noACLDirection, .implausibleTimestamps, .reassemblyLimited, .unknownRecordTypes:
                notes.append("capture: \(note)")
            case .roleInferred(let connection, _, _) where numbers[connection] != nil:
                notes.append("capture: \(note)")
            case .undecodedChannel(let connection, _, _, _) where numbers[connection] != nil:
                notes.append("capture: \(note) — operations on it are not in the profile")
            default:
                continue
            }
        }
        if trace.problemCount > 0 {
            let first = trace.problems.first.map { ": first \($0)" } ?? ""
            notes.append(
                "the capture is damaged (\(trace.problemCount) problem\(trace.problemCount == 1 ? "" : "s")\(first)); what was complete is imported"
            )
        }
        if unanswered > 0 {
            notes.append("\(unanswered) requests the device never answered in the capture (lost or filtered): left out")
        }
        notes += replica.l2capChannelNotes
        if skippedReadMultiple > 0 {
            notes.append("\(skippedReadMultiple) Read Multiple responses not split into values (their lengths are not in the PDU)")
        }
        if !deviceRequests.isEmpty {
            let count = deviceRequests.values.reduce(0, +)
            notes.append(
                "the device also used the phone's GATT server (\(count) requests, e.g. for the phone's own services): not emulated")
        }
        if let refused = replica.security.refusedWith {
            notes.append("the device refused pairing (SMP Pairing Failed, reason 0x\(Hex.byte(refused)))")
        } else if replica.security.pairingSeen {
            notes.append(
                "pairing seen" + (replica.security.ioCapability.map { ": the device's IO capability \(IOCapability(rawValue: $0))" } ?? "")
                    + (replica.security.bonding == true ? ", bonding" : "") + (replica.security.mitm == true ? ", MITM" : "")
                    + (replica.security.secureConnections == true ? ", Secure Connections" : "") + " — gattemu pairs as BlueZ is configured"
            )
        }
        if replica.security.encrypted && !security.isEmpty == false {
            notes.append(
                "the link was encrypted, but no operation was refused for lack of it: which characteristics need encryption is not known from the capture"
            )
        }
        notes += freshValueNotes()
        replica.notes += notes
    }

    /// Characteristics written several times, never with the same bytes twice: likely nonces or app-level crypto.
    func freshValueNotes() -> [String] {
        var values: [AttributeHandle: Set<[UInt8]>] = [:]
        var counts: [AttributeHandle: Int] = [:]
        for event in replica.conversation {
            guard case .write(let handle, let value, _) = event.kind else { continue }
            counts[handle, default: 0] += 1
            if value.count >= 8 { values[handle, default: []].insert(value) }
        }
        return counts.keys.sorted().compactMap { handle in
            guard let count = counts[handle], count >= 2, values[handle]?.count == count else { return nil }
            return
                "writes to handle \(handle) never repeat (\(count) distinct values of 8+ bytes): if they carry fresh nonces or app-level encryption, replay answers only identical writes and others get the otherwise rule"
        }
    }

    // MARK: Times

    func time(_ timestamp: Int64?) -> Double? {
        guard let timestamp, let origin else { return nil }
        let (difference, overflow) = timestamp.subtractingReportingOverflow(origin)
        return overflow ? nil : Double(difference) / 1_000_000
    }

    func event(_ kind: DeviceReplica.Event.Kind, frame: Int, timestamp: Int64?, _ number: Int) -> DeviceReplica.Event {
        DeviceReplica.Event(kind, time: time(timestamp), frame: frame, connection: number)
    }

    static func at(frame: Int, time: Double?) -> String {
        "frame \(frame)" + (time.map { " at " + seconds($0) } ?? "")
    }

    /// `12.345 s`.
    static func seconds(_ value: Double) -> String {
        guard value.isFinite, value.magnitude < 1e12 else { return "\(value) s" }
        let milliseconds = Int64((value * 1000).rounded())
        let sign = milliseconds < 0 ? "-" : ""
        let magnitude = milliseconds.magnitude
        let fraction = String(magnitude % 1000)
        return sign + String(magnitude / 1000) + "." + String(repeating: "0", count: 3 - fraction.count) + fraction + " s"
    }
}
