import Bluetooth
import Capture
import Replica
import TextEscaping

/// Turns one peripheral of a decoded capture into a ``DeviceReplica``: its advertisement, the GATT table its
/// central discovered, the values it read, and the conversation (reads, writes, subscriptions, notifications).
///
/// Pick the device with ``choices(in:)`` and ``select(_:in:)``; the capture is the central's (a phone's
/// `btsnoop_hci.log`, a btmon file of a Linux central), so the peripheral is the other end of its connections.
public enum CaptureImport {
    /// A peripheral the capture talks to (or only hears advertising).
    public struct Choice: Sendable, Hashable, CustomStringConvertible {
        /// The device's address; nil when the capture has only its data (an ATT-only export).
        public var address: DeviceAddress?
        /// The connections to it, by ``CaptureConnection/id``.
        public var connections: [Int]
        public var names: [String]
        public var attPDUs: Int
        public var advertisingReports: Int
        /// For a peer with no address: the HCI connection handle of its link (what Wireshark shows), else nil.
        public var handle: UInt16? = nil

        public var description: String {
            var text =
                address?.description
                ?? "an unknown peer (connection \(connections.map(String.init).joined(separator: ", "))"
                + (handle.map { ", HCI handle 0x" + Hex.word($0) } ?? "") + ")"
            // Names are the device's text: escaped here, so that no name starts a line of its own in a list of choices.
            if !names.isEmpty { text += " \"" + names.prefix(3).map { TerminalText.escaped($0) }.joined(separator: "\", \"") + "\"" }
            text +=
                ": \(connections.count) connection\(connections.count == 1 ? "" : "s"), \(attPDUs) ATT PDUs, \(advertisingReports) advertising reports"
            return text
        }
    }

    /// Why no device could be chosen.
    public enum SelectionError: Error, Sendable, CustomStringConvertible {
        case noPeripheral
        /// `untrackedReports`: advertising reports of advertisers past ``CaptureTrace/maximumAdvertisers`` (not listed).
        case ambiguous([Choice], untrackedReports: Int = 0)
        case noMatch(String, [Choice])

        public var description: String {
            switch self {
            case .noPeripheral:
                "the capture has no connection to a peripheral and no advertising: nothing to import"
            case .ambiguous(let choices, let untracked):
                "the capture talks to \(choices.count)\(untracked > 0 ? " or more" : "") peripherals; pick one with --device ADDRESS|NAME|'connection N':\n"
                    + Self.listed(choices)
                    + (untracked > 0
                        ? "\n  … and \(untracked) advertising reports of advertisers past the first \(CaptureTrace.maximumAdvertisers), not kept"
                            + " (a device the capture connected to is listed whatever its place)"
                        : "")
            case .noMatch(let wanted, let choices):
                "no device \"\(wanted)\" in the capture" + (choices.isEmpty ? "" : "; it has:\n" + Self.listed(choices))
            }
        }

        /// How many devices an error lists (a capture of a crowded room names thousands; `--list` shows them).
        public static let listedChoices = 50

        static func listed(_ choices: [Choice]) -> String {
            let shown = choices.prefix(listedChoices).map { "  " + $0.description }
            let more = choices.count - shown.count
            return (shown + (more > 0 ? ["  … and \(more) more (gattemu import --list shows them)"] : [])).joined(separator: "\n")
        }
    }

    /// The peripherals of the capture: the peers of connections on which the capturing host is the central
    /// (or whose ATT traffic shows it is the client), then devices only heard advertising.
    public static func choices(in trace: CaptureTrace) -> [Choice] {
        var byPeer: [DeviceAddress?: Choice] = [:]
        var order: [DeviceAddress?] = []
        var unknown: [Choice] = []
        let pdus = trace.attPDUCounts
        for connection in trace.connections where connection.link == .le && isPeripheral(connection, trace: trace) {
            guard let peer = connection.peer else {
                unknown.append(
                    Choice(
                        address: nil, connections: [connection.id], names: [], attPDUs: pdus[connection.id] ?? 0, advertisingReports: 0,
                        handle: connection.handle))
                continue
            }
            if byPeer[peer] == nil {
                order.append(peer)
                byPeer[peer] = Choice(address: peer, connections: [], names: [], attPDUs: 0, advertisingReports: 0)
            }
            byPeer[peer]?.connections.append(connection.id)
            byPeer[peer]?.attPDUs += pdus[connection.id] ?? 0
        }
        // Advertised names first, then the GAP names read: each once, at most DistinctNames.limit a device.
        var names: [DeviceAddress: DistinctNames] = [:]
        for advertiser in trace.advertisers where advertiser.connectableOrScanned {
            if byPeer[advertiser.address] == nil {
                order.append(advertiser.address)
                byPeer[advertiser.address] = Choice(
                    address: advertiser.address, connections: [], names: [], attPDUs: 0, advertisingReports: 0)
            }
            byPeer[advertiser.address]?.advertisingReports += advertiser.reportCount
            for name in advertiser.names.compactMap(displayName) { names[advertiser.address, default: DistinctNames()].insert(name) }
        }
        let read = gapNames(trace)
        for case (let peer?, let choice) in byPeer {
            for connection in choice.connections {
                for name in read[connection]?.names ?? [] { names[peer, default: DistinctNames()].insert(name) }
            }
        }
        for (peer, found) in names { byPeer[peer]?.names = found.names }
        return order.compactMap { byPeer[$0] } + unknown
    }

    /// The device to import: the one matching `wanted` (an address, a name or name prefix, any case, or
    /// `connection N` for a peer with no address), or without it the only peripheral the capture connected to.
    public static func select(_ wanted: String?, in trace: CaptureTrace) throws(SelectionError) -> Choice {
        let all = choices(in: trace)
        guard let wanted else {
            let connected = all.filter { !$0.connections.isEmpty && $0.attPDUs > 0 }
            if connected.count == 1 { return connected[0] }
            if connected.isEmpty, all.count == 1 { return all[0] }
            if connected.isEmpty && all.isEmpty { throw .noPeripheral }
            throw .ambiguous(
                connected.isEmpty ? all : connected, untrackedReports: connected.isEmpty ? trace.untrackedAdvertisingReports : 0)
        }
        if let id = connectionNumber(wanted) {
            // A peer with no address (a link open before the capture began) is named by its connection, as listed.
            if let match = all.first(where: { $0.connections.contains(id) }) { return match }
            throw .noMatch(wanted, all)
        }
        if let address = BluetoothAddress(wanted) {
            let matches = all.filter { $0.address?.address == address }
            if matches.count == 1 { return matches[0] }
            if !matches.isEmpty { throw .ambiguous(matches) }
            throw .noMatch(wanted, all)
        }
        let lowered = wanted.lowercased()
        let exact = all.filter { $0.names.contains { $0.lowercased() == lowered } }
        if exact.count == 1 { return exact[0] }
        let prefixed = exact.isEmpty ? all.filter { $0.names.contains { $0.lowercased().hasPrefix(lowered) } } : exact
        if prefixed.count == 1 { return prefixed[0] }
        if prefixed.isEmpty { throw .noMatch(wanted, all) }
        throw .ambiguous(prefixed)
    }

    /// N of `connection N` (any case), the form the list of choices names a peer with no address by.
    static func connectionNumber(_ wanted: String) -> Int? {
        let words = wanted.split(separator: " ")
        guard words.count == 2, words[0].lowercased() == "connection", words[1].allSatisfy(\.isASCII) else { return nil }
        return Int(words[1]).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// The scope of a trace that holds everything ``replica(of:in:source:)`` needs for `choice` (chosen in
    /// `survey`, a trace of the same capture): its connections and its advertising, also under the resolvable
    /// private addresses it connected from.
    public static func scope(for choice: Choice, in survey: CaptureTrace) -> CaptureTrace.Scope {
        var advertisers: Set<BluetoothAddress> = []
        if let address = choice.address { advertisers.insert(address.address) }
        for id in choice.connections {
            if let rpa = survey.connection(id)?.peerResolvablePrivateAddress { advertisers.insert(rpa) }
        }
        return .device(connections: Set(choice.connections), advertisers: advertisers)
    }

    /// Builds the replica of `choice`; `source` names the capture in descriptions.
    public static func replica(of choice: Choice, in trace: CaptureTrace, source: String) -> DeviceReplica {
        var builder = ReplicaBuilder(trace: trace, choice: choice, source: source)
        return builder.build()
    }

    /// Whether the capturing host is the central (the peer the peripheral) on `connection`.
    static func isPeripheral(_ connection: CaptureConnection, trace: CaptureTrace) -> Bool {
        connection.localRole != .peripheral
    }

    /// A device name as people type it: without the NULs and spaces devices pad names with; nil when empty.
    static func displayName(_ name: String) -> String? {
        let trimmed = String(name.unicodeScalars.reversed().drop { $0 == "\0" || $0 == " " }.reversed().map(Character.init))
        return trimmed.isEmpty ? nil : trimmed
    }

    /// GAP Device Names read over ATT, by connection (one pass over the transactions; each name once, at most
    /// ``DistinctNames/limit`` a connection).
    static func gapNames(_ trace: CaptureTrace) -> [Int: DistinctNames] {
        var names: [Int: DistinctNames] = [:]
        for transaction in trace.attTransactions where transaction.outcome == .answered && transaction.requestedType == .deviceName {
            guard case .readByTypeResponse(let entries)? = transaction.response?.message,
                names[transaction.connection]?.names.count ?? 0 < DistinctNames.limit
            else { continue }
            for entry in entries {
                if let name = displayName(String(decoding: entry.value, as: UTF8.self)) {
                    names[transaction.connection, default: DistinctNames()].insert(name)
                }
            }
        }
        return names
    }
}
