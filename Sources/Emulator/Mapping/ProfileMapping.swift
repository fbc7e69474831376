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
        return advertisement
    }

    /// Advertising-budget problems of every advertisement and variant, located in the profile.
    public static func advertisementDiagnostics(_ profile: DeviceProfile) -> [Diagnostic] {
        let environment = EngineEnvironment(adapterAddress: .zero)
        var diagnostics: [Diagnostic] = []
        for variant in [nil] + profile.variantNames.map(Optional.some) {
            for (index, spec) in profile.advertisements(variant: variant, environment: environment).enumerated() {
                let budget = AdvertisementBudget(advertisement(spec))
                guard !budget.fits else { continue }
                let path = "advertisements[\(index)]"
                diagnostics.append(
                    profile.diagnostic(
                        at: path, message: (variant.map { "variant \"\($0)\": " } ?? "") + budget.description,
                        hint:
                            "legacy advertising carries 31 bytes; BlueZ puts only the local name in the scan response: shorten the name or drop fields"
                    ))
            }
        }
        return diagnostics
    }
}
