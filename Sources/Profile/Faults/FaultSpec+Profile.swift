extension DeviceProfile {
    /// What is wrong with `spec` for this profile (unknown characteristic, unusable operation, unknown
    /// advertisement variant), or nil when it fits.
    public func problem(with spec: FaultSpec) -> FaultSpecError? {
        if let id = spec.scope.characteristic {
            guard let characteristic = characteristic(id) else {
                let hint =
                    (idHint(forUUID: id.rawValue) ?? Suggestions.hint(for: id.rawValue, in: characteristics.map(\.id.rawValue))).map {
                        " (\($0))"
                    } ?? ""
                return FaultSpecError(path: "characteristic", message: "unknown characteristic \"\(id)\"\(hint)", kind: .notFound)
            }
            let needed: [CharacteristicFlag] =
                switch spec.on {
                case .read: [.read]
                case .write: [.write, .writeWithoutResponse]
                case .notify: [.notify]
                case .indicate: [.indicate]
                case .connect, .pair, .start, .upload, .confirm, .reset, .channel, .sdu, .send: []
                }
            if !needed.isEmpty, !needed.contains(where: characteristic.has) {
                return FaultSpecError(
                    path: "on", message: "characteristic \"\(id)\" has no \(needed.map(\.rawValue).joined(separator: " or ")) flag",
                    kind: .conflict)
            }
        }
        if spec.on.isAboutFirmware, firmware == nil {
            return FaultSpecError(
                path: "on",
                message: "\"\(spec.on.rawValue)\" faults are a firmware-update target's: this profile has no \"firmware\" section",
                kind: .conflict)
        }
        if spec.on.isAboutChannel, channels.isEmpty {
            return FaultSpecError(
                path: "on", message: "\"\(spec.on.rawValue)\" faults are about L2CAP channels: this profile has no \"channels\"",
                kind: .conflict)
        }
        if let id = spec.scope.channel, channel(id) == nil {
            let hint = Suggestions.hint(for: id, in: channels.map(\.id)).map { " (\($0))" } ?? ""
            return FaultSpecError(path: "channel", message: "unknown channel \"\(id)\"\(hint)", kind: .notFound)
        }
        if spec.action.heldRefusal == .insufficientEncryption,
            let strict = channels.first(where: { channel in
                (spec.scope.channel.map { $0 == channel.id } ?? true) && ![.none, .encrypted].contains(channel.security)
            })
        {
            return FaultSpecError(
                path: "refuse",
                message:
                    "channel \"\(strict.id)\" asks for \(strict.security.rawValue) links: the kernel refuses a link short of it with"
                    + " insufficient-authentication (0x0005), never insufficient-encryption",
                kind: .conflict)
        }
        if spec.on == .pair, pairingSecurity == nil {
            return FaultSpecError(
                path: "on",
                message: "this profile does not pair: give it a \"security\" section (or a characteristic that needs encryption)",
                kind: .conflict)
        }
        if case .advertise(let variant?) = spec.action,
            !advertisements.contains(where: { $0.variants[variant] != nil })
        {
            let known = Set(advertisements.flatMap(\.variants.keys)).sorted()
            return FaultSpecError(
                path: "advertise",
                message: "unknown advertisement variant \"\(variant)\""
                    + (known.isEmpty ? " (this profile has none)" : " (known: \(known.joined(separator: ", ")))"), kind: .notFound)
        }
        return nil
    }
}
