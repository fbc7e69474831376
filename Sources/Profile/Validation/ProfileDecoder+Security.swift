import Bluetooth
import JSON
import Lexical

extension ProfileDecoder {
    /// The `"security"` section: `io`, `pairing`, `passkey`, `confirm`, `secureConnections`.
    mutating func security(_ node: JSONNode, _ path: String) -> SecurityDefinition? {
        guard members(node, path, allowed: ["io", "pairing", "passkey", "confirm", "secureConnections", "description"]) != nil else {
            return nil
        }
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        var security = SecurityDefinition()
        security.path = path
        if let io = node["io"], let text = string(io, sub("io")) {
            if let capability = IOCapability(name: text) {
                security.io = capability
            } else {
                error(
                    io, sub("io"), "unknown IO capability \"\(text)\"",
                    hint: "use one of " + IOCapability.all.compactMap(\.name).joined(separator: ", "))
            }
        }
        if let pairing = node["pairing"], let text = string(pairing, sub("pairing")) {
            if let value = SecurityDefinition.Pairing(rawValue: text) {
                security.pairing = value
            } else {
                error(pairing, sub("pairing"), "unknown pairing \"\(text)\"", hint: "use \"accept\" or \"refuse\"")
            }
        }
        if let confirm = node["confirm"], let text = string(confirm, sub("confirm")) {
            if let value = SecurityDefinition.Confirmation(rawValue: text) {
                security.confirm = value
            } else {
                error(
                    confirm, sub("confirm"), "unknown confirm \"\(text)\"",
                    hint: "use \"auto\" (gattemu confirms) or \"api\" (POST /v1/pairing confirms)")
            }
        }
        if let mode = node["secureConnections"], let text = string(mode, sub("secureConnections")) {
            if text == SecureConnectionsMode.only.rawValue {
                error(
                    mode, sub("secureConnections"),
                    "\"only\" is not possible on Linux: in the kernel's Secure Connections Only "
                        + "mode every LE link is dropped once it is encrypted (the check wants a BR/EDR P-256 link key), so no "
                        + "central could ever use the device",
                    hint: "flag the characteristics that need it \"secure-read\"/\"secure-write\" (Level 4: authenticated "
                        + "Secure Connections), and see docs/pairing.md")
            } else if let value = SecureConnectionsMode(rawValue: text) {
                security.secureConnections = value
            } else {
                error(
                    mode, sub("secureConnections"), "unknown secureConnections \"\(text)\"",
                    hint: "use \"on\" (legacy pairing when the central lacks it) or \"off\" (legacy pairing only)")
            }
        }
        if let passkey = node["passkey"] {
            security.passkey = self.passkey(passkey, sub("passkey"))
            if security.passkey != nil, !security.io.canType {
                error(
                    passkey, sub("passkey"), "a passkey is typed only by a device that has a keyboard",
                    hint: "set \"io\" to \"KeyboardOnly\" or \"KeyboardDisplay\"; a device that displays its passkey "
                        + "shows the one the kernel draws at random (docs/pairing.md)")
            }
        }
        if let description = node["description"] { _ = string(description, sub("description")) }
        return security
    }

    /// A passkey: 0…999999 as a number, or six digits as a string (`"000123"`).
    mutating func passkey(_ node: JSONNode, _ path: String) -> UInt32? {
        if case .string(let text) = node.value {
            guard let value = StrictParse.passkey(text) else {
                error(node, path, "a passkey is six decimal digits", hint: "e.g. \"000123\" or 123")
                return nil
            }
            return value
        }
        return integer(node, path, in: Int(Passkey.range.lowerBound)...Int(Passkey.range.upperBound)).map(UInt32.init)
    }
}
