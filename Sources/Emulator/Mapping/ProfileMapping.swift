import BlueZ
import Profile

/// Turns profile definitions into the BlueZ layer's definitions.
public enum ProfileMapping {
    /// The GATT services of `profile` but those in `absent`; characteristics that notify use `notifyPath`,
    /// indicate-only ones PropertiesChanged.
    public static func services(
        of profile: DeviceProfile, engine: BehaviourEngine, notifyPath: GattNotifyPath, absent: Set<String> = []
    ) -> [GattServiceDefinition] {
        profile.services.filter { !absent.contains($0.id) }.map { service in
            GattServiceDefinition(
                id: service.id, uuid: service.uuid, primary: service.primary, includes: service.includes,
                characteristics: service.characteristics.map { characteristic in
                    GattCharacteristicDefinition(
                        id: characteristic.id, uuid: characteristic.uuid, flags: characteristic.declaredFlags,
                        initialValue: engine.value(of: characteristic.id),
                        notifyPath: characteristic.has(.notify) ? notifyPath : .propertiesChanged,
                        descriptors: characteristic.descriptors.map { descriptor in
                            GattDescriptorDefinition(
                                id: descriptor.id, uuid: descriptor.uuid, flags: descriptor.declaredFlags,
                                initialValue: profile.descriptorValue(descriptor, environment: engine.environment),
                                handle: descriptor.handle)
                        }, handle: characteristic.handle)
                }, handle: service.handle)
        }
    }

    public static func advertisement(_ spec: AdvertisementSpec) -> Advertisement {
        var advertisement = Advertisement()
        advertisement.kind = spec.type == .broadcast ? .broadcast : .peripheral
        advertisement.localName = spec.localName
        advertisement.serviceUUIDs = spec.serviceUUIDs
        advertisement.solicitUUIDs = spec.solicitUUIDs
        advertisement.manufacturerData = spec.manufacturerData
        advertisement.serviceData = spec.serviceData
        advertisement.appearance = spec.appearance
        advertisement.txPower = spec.txPower.flatMap { Int16(exactly: $0) }
        advertisement.includes = spec.includes
        advertisement.discoverable = spec.discoverable
        advertisement.minInterval = spec.minInterval.flatMap { UInt32(exactly: $0) }
        advertisement.maxInterval = spec.maxInterval.flatMap { UInt32(exactly: $0) }
        advertisement.duration = spec.duration.flatMap { UInt16(exactly: $0) }
        advertisement.timeout = spec.timeout.flatMap { UInt16(exactly: $0) }
        advertisement.data = spec.data
        advertisement.secondaryChannel = spec.secondaryChannel
        advertisement.scanResponse = spec.scanResponse
        return advertisement
    }

    /// Advertising-budget problems of every advertisement and variant, located in the profile: legacy ones against
    /// 31 bytes, extended ones against the most any adapter takes (251); ``advertisingProblems(_:on:adapter:)``
    /// holds them to an adapter's own limits.
    public static func advertisementDiagnostics(_ profile: DeviceProfile) -> [Diagnostic] {
        budgetProblems(profile) { _ in nil }
    }

    /// What `adapter` cannot advertise of the profile, located in it: more advertisements than it has instances
    /// free, a secondary channel it does not offer, more bytes than its `MaxAdvLen`/`MaxScnRspLen`, a TX power
    /// outside its range. Warnings (severity `.warning`) for what bluetoothd would quietly not apply: a `txPower`
    /// without `CanSetTxPower`, scan response fields without `-E` (`experimental` false; nil: not known).
    public static func advertisingProblems(
        _ profile: DeviceProfile, on capabilities: AdvertisingCapabilities, adapter: String, experimental: Bool? = nil
    ) -> [Diagnostic] {
        var problems: [Diagnostic] = []
        let definitions = profile.advertisements
        if let free = capabilities.supportedInstances, definitions.count > free {
            let first = definitions[free]
            problems.append(
                profile.diagnostic(
                    at: first.path,
                    message:
                        "\(adapter) has \(free) advertising instance\(free == 1 ? "" : "s") free (SupportedInstances \(free)\(capabilities.activeInstances.map { ", ActiveInstances \($0)" } ?? "")): the profile has \(definitions.count) advertisements",
                    hint: "advertise fewer sets on this adapter, or free instances other programs hold"))
        }
        for definition in definitions {
            let variants = definition.variants.sorted(by: { $0.key < $1.key }).map { ($0.key, $0.value) }
            for (variant, fields) in [(String?.none, definition.fields)] + variants {
                let prefix = variant.map { "variant \"\($0)\": " } ?? ""
                let path =
                    variant.map { JSONPath.appending($0, to: JSONPath.appending("variants", to: definition.path)) } ?? definition.path
                if let channel = fields.secondaryChannel, !capabilities.secondaryChannels.contains(channel.rawValue) {
                    problems.append(
                        profile.diagnostic(
                            at: JSONPath.appending("secondaryChannel", to: path),
                            message: capabilities.secondaryChannels.isEmpty
                                ? "\(prefix)\(adapter) has no extended advertising (bluetoothd reports no SupportedSecondaryChannels): it cannot advertise on the \(channel.rawValue) secondary channel"
                                : "\(prefix)\(adapter) offers the secondary channels \(capabilities.secondaryChannels.joined(separator: ", ")) (SupportedSecondaryChannels), not \(channel.rawValue)",
                            hint: capabilities.secondaryChannels.isEmpty
                                ? "leave secondaryChannel out for legacy advertising (31 bytes), or use a Bluetooth 5 adapter"
                                : "use one of \(capabilities.secondaryChannels.joined(separator: ", "))"))
                }
                if let power = fields.txPower {
                    if let low = capabilities.minTxPower, let high = capabilities.maxTxPower, !(low...high).contains(power) {
                        problems.append(
                            profile.diagnostic(
                                at: JSONPath.appending("txPower", to: path),
                                message:
                                    "\(prefix)txPower \(power) dBm is outside what \(adapter) can send (MinTxPower \(low), MaxTxPower \(high))",
                                hint: "use a power from \(low) to \(high) dBm"))
                    } else if !capabilities.canSetTxPower {
                        problems.append(
                            profile.diagnostic(
                                at: JSONPath.appending("txPower", to: path),
                                message:
                                    "\(prefix)txPower \(power) dBm is not applied: \(adapter) does not set TX power per advertisement (no CanSetTxPower)",
                                hint: "the controller's default power is used", severity: .warning))
                    }
                }
                if experimental == false, fields.scanResponse != nil {
                    problems.append(
                        profile.diagnostic(
                            at: JSONPath.appending("scanResponse", to: path),
                            message: "\(prefix)bluetoothd runs without -E (--experimental): it ignores the scan response fields",
                            hint: "start bluetoothd with -E (bluetoothd 5.80 or later takes ScanResponse* fields)", severity: .warning))
                }
            }
        }
        return problems + budgetProblems(profile) { capabilities.limits(for: $0) }
    }

    /// Budget problems of every advertisement and variant under the limits `limits` gives (nil: the default ones).
    static func budgetProblems(
        _ profile: DeviceProfile, limits: (Advertisement) -> AdvertisementBudget.Limits?
    ) -> [Diagnostic] {
        let environment = EngineEnvironment(adapterAddress: .zero)
        var diagnostics: [Diagnostic] = []
        for variant in [nil] + profile.variantNames.map(Optional.some) {
            for (index, spec) in profile.advertisements(variant: variant, environment: environment).enumerated() {
                // An advertisement without the variant advertises its base: checked once, as the base.
                if let variant, profile.advertisements.indices.contains(index), profile.advertisements[index].variants[variant] == nil {
                    continue
                }
                let advertisement = advertisement(spec)
                let budget = AdvertisementBudget(advertisement, limits: limits(advertisement))
                guard !budget.fits else { continue }
                let path = profile.advertisements.indices.contains(index) ? profile.advertisements[index].path : "advertisements[\(index)]"
                diagnostics.append(
                    profile.diagnostic(
                        at: path, message: (variant.map { "variant \"\($0)\": " } ?? "") + budget.description,
                        hint: advertisement.isExtended
                            ? "an extended advertisement carries the adapter's MaxAdvLen (251 bytes at most) in its advertising data; a connectable one has no scan response (use type broadcast for one): shorten or drop fields"
                            : "legacy advertising carries 31 bytes; BlueZ puts only the local name in the scan response: shorten the name or drop fields, or set secondaryChannel for extended advertising (Bluetooth 5 adapters, up to 251 bytes)"
                    ))
            }
        }
        return diagnostics
    }
}
