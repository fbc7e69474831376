import Bluetooth

extension DeviceReplica {
    /// A note for each characteristic where the device publishes the PSM of an L2CAP channel (Apple's
    /// ``BluetoothUUID/l2capPSM``): the profile made of the replica serves the characteristic and its value, not the
    /// channel behind it, and says so.
    /// A PSM whose channel was recorded too (``channels``, from a capture) gets no note: the profile serves it.
    public var l2capChannelNotes: [String] {
        let recorded = Set(channels.map(\.psm))
        return services.flatMap(\.characteristics).filter { $0.uuid == .l2capPSM }.filter { characteristic in
            guard let value = characteristic.value, value.count == 2 else { return true }
            return !recorded.contains(UInt16(value[0]) | UInt16(value[1]) << 8)
        }.map { characteristic in
            "L2CAP: the device publishes an L2CAP channel's PSM in \(BluetoothUUID.l2capPSM) ("
                + Self.describePSM(characteristic.value) + "): apps open that channel with openL2CAPChannel or "
                + "createL2capChannel; the profile serves the characteristic, not the channel, so opening it fails"
        }
    }

    /// `PSM 0x0081 (129), LE dynamic range` from the characteristic's value (16 bits, little endian, as iOS reads it).
    public static func describePSM(_ value: [UInt8]?) -> String {
        guard let value, !value.isEmpty else { return "its value was not read" }
        guard value.count <= 2 else { return "value \(value.count) bytes, not a 16-bit PSM" }
        let psm = Int(value[0]) | (value.count == 2 ? Int(value[1]) << 8 : 0)
        let range =
            (0x80...0xFF).contains(psm)
            ? "LE dynamic range" : (1...0x7F).contains(psm) ? "fixed, SIG-assigned range" : "outside the LE ranges"
        return "PSM 0x\(Hex.word(UInt16(psm))) (\(psm)), \(range)"
    }
}
