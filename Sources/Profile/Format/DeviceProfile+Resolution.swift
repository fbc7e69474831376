extension DeviceProfile {
    /// The GAP device name, e.g. `NOKE3E_D01FA644B36F`; nil when the profile sets none.
    public func deviceName(
        environment: EngineEnvironment, state: [String: ProfileValue]? = nil, variables: [String: ProfileValue]? = nil
    ) -> String? {
        guard let template = device.name else { return nil }
        var context = staticContext(environment: environment, state: state, variables: variables)
        return template.renderText(in: &context)
    }

    /// Every advertisement resolved for a variant (nil = base). Advertisements without that
    /// variant use their base fields. `state` defaults to the profile's initial state.
    public func advertisements(
        variant: String?, environment: EngineEnvironment, state: [String: ProfileValue]? = nil,
        variables: [String: ProfileValue]? = nil
    ) -> [AdvertisementSpec] {
        advertisements.indices.map { advertisement(at: $0, variant: variant, environment: environment, state: state, variables: variables) }
    }

    /// The first (or `index`-th) advertisement resolved for a variant; an empty spec if there is none.
    public func advertisement(
        at index: Int = 0, variant: String?, environment: EngineEnvironment, state: [String: ProfileValue]? = nil,
        variables: [String: ProfileValue]? = nil
    ) -> AdvertisementSpec {
        guard advertisements.indices.contains(index) else { return AdvertisementSpec() }
        let definition = advertisements[index]
        var fields = definition.fields
        if let variant, let override = definition.variants[variant] { fields = fields.overridden(by: override) }
        var context = staticContext(environment: environment, state: state, variables: variables)
        var spec = AdvertisementSpec()
        spec.type = fields.type ?? .peripheral
        // What bluetoothd refuses the whole advertisement for (validation refuses it where it is written literally;
        // a template may still render it): a name is cut at a NUL (a D-Bus string cannot hold one), and an entry whose
        // bytes render empty is left out.
        spec.localName = fields.localName.map { String($0.renderText(in: &context).prefix { $0 != "\u{0}" }) }
        spec.serviceUUIDs = fields.serviceUUIDs ?? []
        spec.solicitUUIDs = fields.solicitUUIDs ?? []
        for (company, template) in fields.manufacturerData ?? [:] {
            let bytes = template.render(in: &context)
            if !bytes.isEmpty { spec.manufacturerData[company] = bytes }
        }
        for (uuid, template) in fields.serviceData ?? [:] {
            let bytes = template.render(in: &context)
            if !bytes.isEmpty { spec.serviceData[uuid] = bytes }
        }
        for (type, template) in fields.data ?? [:] {
            let bytes = template.render(in: &context)
            if !bytes.isEmpty { spec.data[type] = bytes }
        }
        spec.appearance = fields.appearance ?? device.appearance
        spec.txPower = fields.txPower
        spec.includes = fields.includes ?? []
        spec.discoverable = fields.discoverable
        spec.minInterval = fields.minInterval
        spec.maxInterval = fields.maxInterval
        spec.duration = fields.duration
        spec.timeout = fields.timeout
        spec.secondaryChannel = fields.secondaryChannel
        if let scan = fields.scanResponse {
            spec.scanResponse.serviceUUIDs = scan.serviceUUIDs ?? []
            spec.scanResponse.solicitUUIDs = scan.solicitUUIDs ?? []
            for (company, template) in scan.manufacturerData ?? [:] {
                let bytes = template.render(in: &context)
                if !bytes.isEmpty { spec.scanResponse.manufacturerData[company] = bytes }
            }
            for (uuid, template) in scan.serviceData ?? [:] {
                let bytes = template.render(in: &context)
                if !bytes.isEmpty { spec.scanResponse.serviceData[uuid] = bytes }
            }
            for (type, template) in scan.data ?? [:] {
                let bytes = template.render(in: &context)
                if !bytes.isEmpty { spec.scanResponse.data[type] = bytes }
            }
        }
        return spec
    }

    /// The initial value of a descriptor, rendered for an adapter.
    public func descriptorValue(_ descriptor: DescriptorDefinition, environment: EngineEnvironment) -> [UInt8] {
        var context = staticContext(environment: environment, state: nil, variables: nil)
        context.generator = SeededGenerator(seed: environment.seed ^ 0xD35C)
        return descriptor.value.template.render(in: &context)
    }

    func staticContext(
        environment: EngineEnvironment, state: [String: ProfileValue]?, variables: [String: ProfileValue]?
    ) -> TemplateContext {
        TemplateContext(
            variables: variables ?? initialVariables, state: state ?? initialState,
            adapterAddress: environment.adapterAddress, generator: SeededGenerator(seed: environment.seed))
    }
}
