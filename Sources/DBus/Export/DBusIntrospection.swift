/// Builds `org.freedesktop.DBus.Introspectable` XML for an exported object.
enum DBusIntrospection {
    static func xml(interfaces: [DBusInterface], isObjectManager: Bool, children: [String]) -> String {
        var lines = [
            #"<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">"#,
            "<node>",
            #"  <interface name="org.freedesktop.DBus.Introspectable"><method name="Introspect"><arg name="xml" type="s" direction="out"/></method></interface>"#,
        ]
        if !interfaces.isEmpty {
            lines.append(
                #"  <interface name="org.freedesktop.DBus.Properties">"#
                    + #"<method name="Get"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="out"/></method>"#
                    + #"<method name="GetAll"><arg type="s" direction="in"/><arg type="a{sv}" direction="out"/></method>"#
                    + #"<method name="Set"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="in"/></method>"#
                    + #"<signal name="PropertiesChanged"><arg type="s"/><arg type="a{sv}"/><arg type="as"/></signal></interface>"#)
        }
        if isObjectManager {
            lines.append(
                #"  <interface name="org.freedesktop.DBus.ObjectManager">"#
                    + #"<method name="GetManagedObjects"><arg type="a{oa{sa{sv}}}" direction="out"/></method>"#
                    + #"<signal name="InterfacesAdded"><arg type="o"/><arg type="a{sa{sv}}"/></signal>"#
                    + #"<signal name="InterfacesRemoved"><arg type="o"/><arg type="as"/></signal></interface>"#)
        }
        for interface in interfaces {
            lines.append(#"  <interface name="\#(interface.name)">"#)
            for method in interface.methods {
                let inputs = arguments(method.inputSignature).map { #"<arg type="\#($0)" direction="in"/>"# }
                let outputs = arguments(method.outputSignature).map { #"<arg type="\#($0)" direction="out"/>"# }
                lines.append(#"    <method name="\#(method.name)">"# + (inputs + outputs).joined() + "</method>")
            }
            for property in interface.properties {
                let access = property.set == nil ? "read" : "readwrite"
                lines.append(#"    <property name="\#(property.name)" type="\#(property.signature)" access="\#(access)"/>"#)
            }
            for signal in interface.signals {
                lines.append(
                    #"    <signal name="\#(signal.name)">"# + arguments(signal.signature).map { #"<arg type="\#($0)"/>"# }.joined()
                        + "</signal>")
            }
            lines.append("  </interface>")
        }
        for child in children {
            lines.append(#"  <node name="\#(child)"/>"#)
        }
        lines.append("</node>")
        return lines.joined(separator: "\n")
    }

    /// Splits a signature into its complete types.
    static func arguments(_ signature: DBusSignature) -> [String] {
        var result: [String] = []
        var remaining = Substring(signature.rawValue)
        while !remaining.isEmpty {
            let length = completeTypeLength(remaining)
            guard length > 0 else { break }
            result.append(String(remaining.prefix(length)))
            remaining = remaining.dropFirst(length)
        }
        return result
    }

    private static func completeTypeLength(_ text: Substring) -> Int {
        guard let first = text.first else { return 0 }
        switch first {
        case "a": return 1 + completeTypeLength(text.dropFirst())
        case "(", "{":
            let close: Character = first == "(" ? ")" : "}"
            var depth = 0
            for (offset, character) in text.enumerated() {
                if character == first { depth += 1 }
                if character == close { depth -= 1 }
                if depth == 0 { return offset + 1 }
            }
            return text.count
        default: return 1
        }
    }
}
