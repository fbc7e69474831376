import BlueZ
import Bluetooth
import ControlContract
import Emulator
import Lexical
import Profile

// The runtime's snapshots and answers (module Emulator) in the control API's contract form: the one place where
// the runtime's types meet the wire format.

extension Fault {
    /// An installed fault as the control API lists it.
    init(_ fault: ActiveFault) {
        self.init(
            id: fault.id, on: FaultTrigger(rawValue: fault.spec.on.rawValue) ?? .start, action: fault.spec.action.name,
            summary: fault.spec.action.summary, characteristic: fault.spec.scope.characteristic?.rawValue,
            central: fault.spec.scope.central?.description,
            nth: fault.spec.scope.nth, count: fault.spec.scope.count, probability: fault.spec.scope.probability,
            seed: fault.spec.scope.seed,
            matched: fault.matched, fired: fault.fired, exhausted: fault.exhausted, description: fault.spec.description,
            channel: fault.spec.scope.channel)
    }
}

extension FirmwareStatus {
    /// A firmware-update target's state as the control API shows it.
    init(_ snapshot: FirmwareSnapshot) {
        self.init(
            slots: snapshot.slots.map {
                Slot(
                    slot: $0.slot, version: $0.version, hash: $0.hash.hexString(uppercase: false), bootable: $0.bootable,
                    pending: $0.pending,
                    confirmed: $0.confirmed, active: $0.active, permanent: $0.permanent, size: $0.size)
            },
            upload: snapshot.upload.map { Upload(offset: $0.offset, length: $0.length, central: $0.central?.description) },
            rebooting: snapshot.rebooting, bufferSize: snapshot.bufferSize, bufferCount: snapshot.bufferCount, slotSize: snapshot.slotSize)
    }
}

extension ChannelList.Channel {
    /// A profile channel as the control API lists it.
    init(_ snapshot: ChannelSnapshot) {
        self.init(
            id: snapshot.id, psm: snapshot.psm.map(Int.init), mtu: snapshot.mtu, security: snapshot.security.rawValue,
            maximumOpen: snapshot.maximumOpen, publishedIn: snapshot.publishedIn, refusing: snapshot.refusing?.rawValue,
            open: snapshot.open.map {
                ChannelList.Open(number: Int($0.number), central: $0.central.description, centralMTU: $0.centralMTU)
            })
    }
}

extension FaultRequest {
    /// The request that installs `spec` again (a profile's faults, offered as presets).
    public init(_ spec: FaultSpec) {
        let action: FaultActionBody =
            switch spec.action {
            case .delay(let min, let max):
                .delay(min == max ? .fixed(.milliseconds(min)) : .range(min: .milliseconds(min), max: .milliseconds(max)))
            case .drop: .drop
            case .error(let error): .error(.name(error.description))
            case .corrupt(.flipBits(let count)): .corrupt(.flipBits(count))
            case .corrupt(.replace(let at, let bytes)): .corrupt(.replace(at: at, hex: bytes.hexString(uppercase: false)))
            case .corrupt(.xor(let at, let mask)): .corrupt(.xor(at: at, hex: mask.hexString(uppercase: false)))
            case .truncate(let count): .truncate(count)
            case .rewrite(let match, let replace, let all):
                .rewrite(
                    RewriteValue(
                        match: .hex(match.hexString(uppercase: false)), replace: .hex(replace.hexString(uppercase: false)),
                        all: all ? nil : false))
            case .duplicate(let copies): .duplicate(copies == 1 ? nil : copies)
            case .reorder: .reorder
            case .disconnect: .disconnect
            case .silence(let milliseconds): .silence(.milliseconds(milliseconds))
            case .advertise(let variant): .advertise(variant)
            case .powerCycle(let milliseconds): .powerCycle(.milliseconds(milliseconds))
            case .refuse(let refusal): .refuse(refusal?.rawValue)
            case .wrongPasskey: .wrongPasskey
            case .forgetBonds: .forgetBonds
            case .smpError(let code): .smpError(code)
            case .wrongHash: .wrongHash
            case .losePending: .losePending
            case .closeChannel: .closeChannel
            }
        self.init(on: FaultTrigger(rawValue: spec.on.rawValue), action: action)
        id = spec.id
        description = spec.description
        characteristic = spec.scope.characteristic?.rawValue
        central = spec.scope.central?.description
        if spec.scope.nth != 1 { nth = spec.scope.nth }
        if spec.scope.count != (spec.scope.nth != 1 ? 1 : nil) { count = spec.scope.count }
        if spec.scope.probability != 1 { probability = spec.scope.probability }
        seed = spec.scope.seed
        if spec.scope.afterMilliseconds != 0 { after = .milliseconds(spec.scope.afterMilliseconds) }
        percent = spec.scope.percent
        channel = spec.scope.channel
    }
}

extension Event {
    /// A logged event in the contract's form (what ``EmulatorEvent/json`` writes).
    public init(_ event: EmulatorEvent) {
        self.init(
            seq: event.sequence, t: (event.time * 1000).rounded() / 1000, event: EventKind(event.kind), central: event.central?.description,
            characteristic: event.characteristic, value: event.value?.hexString(uppercase: false), detail: event.detail, mtu: event.mtu,
            device: event.device, progress: event.progress.map { Progress(done: $0.done, total: $0.total) })
    }
}

extension ADField {
    init(_ structure: ADStructure) {
        self.init(type: Int(structure.type.rawValue), name: structure.type.description, hex: structure.data.hexString(uppercase: false))
    }
}

extension AdvertisementInfo {
    /// The advertisement's fields and bytes for the status.
    init(_ advertisement: Advertisement, budget: AdvertisementBudget) {
        let layout = budget.layout
        func payload(_ data: AdvertisingData, limit: Int) -> ADPayload {
            ADPayload(hex: data.bytes.hexString(uppercase: false), structures: data.structures.map(ADField.init), limit: limit)
        }
        self.init(
            localName: advertisement.localName, serviceUUIDs: advertisement.serviceUUIDs.map(\.description),
            solicitUUIDs: advertisement.solicitUUIDs.map(\.description),
            manufacturerData: advertisement.manufacturerData.sorted { $0.key < $1.key }.map {
                CompanyData(company: Int($0.key), hex: $0.value.hexString(uppercase: false))
            },
            serviceData: advertisement.serviceData.sorted { $0.key < $1.key }.map {
                ServiceData(uuid: $0.key.description, hex: $0.value.hexString(uppercase: false))
            },
            appearance: advertisement.appearance.map(Int.init), txPower: advertisement.txPower.map(Int.init),
            otherStructures: advertisement.data.sorted { $0.key < $1.key }.map {
                ADField(ADStructure(type: ADType(rawValue: $0.key), data: $0.value))
            },
            advertisingData: payload(layout.advertisingDataStructures, limit: budget.limits.advertisingData),
            scanResponse: payload(layout.scanResponseStructures, limit: budget.limits.scanResponse),
            secondaryChannel: advertisement.secondaryChannel?.rawValue, type: advertisement.kind.rawValue)
    }
}

extension EventKind {
    /// The log's kind; the two lists are the same (ContractTests.eventKindsAreTheLogs).
    init(_ kind: EmulatorEvent.Kind) { self = EventKind(rawValue: kind.rawValue) ?? .note }
}

extension Status {
    public init(_ status: EmulatorStatus) {
        self.init(
            profile: status.profile, deviceName: status.deviceName, adapter: status.adapter.map(AdapterInfo.init),
            advertising: AdvertisingInfo(status.advertising), centrals: status.centrals.map(CentralInfo.init),
            services: status.services.map(ServiceInfo.init), variables: status.variables.mapValues(\.statusText),
            state: status.state.mapValues(\.statusText), values: status.values.map(NamedValueInfo.init), timers: status.timers,
            triggers: status.triggers, triggerDescriptions: status.triggerDescriptions, faults: status.faults.map(Fault.init),
            faultPresets: status.faultPresets.map(FaultRequest.init), lastEvent: status.lastEvent, firmware: status.firmware)
    }
}

extension AdapterInfo {
    init(_ adapter: EmulatorStatus.Adapter) {
        self.init(
            name: adapter.name, address: adapter.address?.description ?? "", alias: adapter.alias,
            privateAddresses: adapter.privateAddresses ? true : nil)
    }
}

extension AdvertisingInfo {
    init(_ advertising: EmulatorStatus.Advertising) {
        self.init(
            advertised: advertising.advertised, wanted: advertising.wanted, variant: advertising.variant, variants: advertising.variants,
            advertisements: advertising.descriptions,
            data: zip(advertising.advertisements, advertising.budgets).map { AdvertisementInfo($0, budget: $1) })
    }
}

extension CentralInfo {
    init(_ central: EmulatorStatus.Central) {
        self.init(
            address: central.address.description, mtu: central.mtu.map(Int.init), subscriptions: central.subscriptions.map(\.rawValue),
            state: central.state
        )
    }
}

extension ServiceInfo {
    init(_ service: EmulatorStatus.Service) {
        self.init(
            id: service.id, uuid: service.uuid.description, name: service.uuid.name, primary: service.primary,
            handle: service.handle.map { Int($0.rawValue) }, characteristics: service.characteristics.map(CharacteristicInfo.init))
    }
}

extension CharacteristicInfo {
    init(_ characteristic: EmulatorStatus.Characteristic) {
        self.init(
            id: characteristic.id.rawValue, uuid: characteristic.uuid.description, name: characteristic.uuid.name,
            flags: characteristic.flags.map(\.rawValue), handle: characteristic.handle.map { Int($0.rawValue) },
            value: characteristic.value.hexString(uppercase: false), maxLength: characteristic.maxLength,
            descriptors: characteristic.descriptors.map(DescriptorInfo.init))
    }
}

extension DescriptorInfo {
    init(_ descriptor: EmulatorStatus.Descriptor) {
        self.init(
            id: descriptor.id, uuid: descriptor.uuid.description, name: descriptor.uuid.name, flags: descriptor.flags.map(\.rawValue),
            value: descriptor.value.hexString(uppercase: false))
    }
}

extension NamedValueInfo {
    init(_ named: EmulatorStatus.NamedValue) {
        self.init(
            name: named.name, kind: named.isState ? .state : .variable, type: ValueType(named.value.kind), value: named.value.statusText,
            perCentral: named.perCentral)
    }
}

extension NamedValueInfo.ValueType {
    init(_ kind: ProfileValue.Kind) {
        switch kind {
        case .number: self = .number
        case .string: self = .string
        case .bool: self = .bool
        case .bytes: self = .bytes
        }
    }
}

extension PairingStatus {
    public init(_ pairing: PairingSnapshot) {
        guard let security = pairing.security else {
            self.init(agent: false)
            return
        }
        self.init(
            agent: pairing.agent, io: security.io.name, pairing: security.pairing.rawValue, confirm: security.confirm.rawValue,
            prompt: pairing.prompt.map(PairingPrompt.init), displayed: pairing.displayed.map(DisplayedPasskey.init))
    }
}

extension PairingPrompt {
    init(_ prompt: PairingSnapshot.Prompt) {
        self.init(
            id: Int(clamping: prompt.id), central: prompt.central?.description ?? "", kind: PairingPromptKind(prompt.kind),
            passkey: prompt.passkey.map(Passkey.digits), device: prompt.device ? true : nil)
    }
}

extension PairingPromptKind {
    init(_ kind: PairingSnapshot.PromptKind) {
        switch kind {
        case .justWorks: self = .justWorks
        case .numericComparison: self = .numericComparison
        case .passkeyEntry: self = .passkeyEntry
        }
    }
}

extension DisplayedPasskey {
    init(_ displayed: PairingSnapshot.Displayed) {
        self.init(
            central: displayed.central?.description ?? "", passkey: Passkey.digits(displayed.passkey), device: displayed.device ? true : nil
        )
    }
}

extension PairingAnswered {
    init(_ prompt: PairingSnapshot.Prompt) {
        self.init(central: prompt.central?.description ?? "", kind: PairingPromptKind(prompt.kind))
    }
}

extension Bond {
    init(_ central: PairedCentral) {
        self.init(
            central: central.address.description, bonded: central.bonded, connected: central.connected,
            addressType: central.addressType.description)
    }
}

extension AddressChanged {
    init(_ change: AddressChange) {
        self.init(
            adapter: change.adapter, identity: change.identity?.description ?? "", irk: change.irk.map { Hex.string($0) },
            changes: change.changes)
    }
}

extension RelaySnapshotResult {
    init(_ snapshot: RelaySnapshot) {
        self.init(
            operations: snapshot.operations, notRecorded: snapshot.notRecorded, profile: snapshot.profile, capture: snapshot.capture,
            captureRecords: snapshot.captureRecords)
    }
}

extension AddressChoice {
    init(_ request: AddressRequest) {
        switch request {
        case .random: self = .random
        case .original: self = .original
        }
    }
}

extension PromptReply {
    init(_ reply: PairingReply) {
        switch reply {
        case .passkey(let passkey): self = .passkey(passkey)
        case .accept(let accept): self = .accept(accept)
        }
    }
}

extension VariableValue {
    /// The body's value; hex as ``ValueForm/hex`` reads it (the body decoder let only valid hex through).
    init(_ body: NamedValueBody) throws(ControlFailure) {
        switch body {
        case .string(let text): self = .string(text)
        case .integer(let number): self = .integer(number)
        case .bool(let flag): self = .bool(flag)
        case .hex(let text):
            guard let bytes = ValueForm.hex.bytes(text) else { throw ControlFailure(.invalid, "bad hex: \"\(text.prefix(80))\"") }
            self = .bytes(bytes)
        }
    }
}
