import Bluetooth

/// Connections: opened by connection-complete events (or first ACL data), changed by encryption and
/// parameter events, closed by disconnection, reset or the controller going away.
extension CaptureDecoder {
    mutating func openConnection(
        controller: UInt16, handle: UInt16, link: LinkType, origin: CaptureConnection.Origin,
        peer: DeviceAddress?, role: ConnectionRole?, roleInferred: Bool = false,
        moment: CaptureMoment, configure: (inout CaptureConnection) -> Void = { _ in }
    ) -> CaptureConnection {
        let key = HandleKey(controller: controller, handle: handle)
        if open[key] != nil {
            // A handle reused without a disconnection in the capture: the old connection ended unseen.
            close(key, reason: nil, moment: moment)
        }
        var connection = CaptureConnection(
            id: nextConnectionID, controller: controller, handle: handle, link: link, origin: origin, peer: peer,
            localRole: role, roleInferred: roleInferred, opened: moment, encryption: [])
        configure(&connection)
        nextConnectionID += 1
        if link == .bredr { statistics.classicConnections += 1 } else { statistics.connections += 1 }
        open[key] = connection
        pending.append(.connection(connection))
        return connection
    }

    mutating func close(_ key: HandleKey, reason: HCIStatus?, moment: CaptureMoment) {
        guard var connection = open.removeValue(forKey: key) else { return }
        connection.closed = moment
        connection.disconnectReason = reason
        for problem in reassembler.drop(controller: key.controller, handle: key.handle) { report(problem, frame: moment.frame) }
        pairing.flush(connection: connection.id, .disconnected) { pending.append(.attTransaction($0)) }
        channels = channels.filter { $0.key.connection != connection.id }
        channelRequests = channelRequests.filter { $0.key.connection != connection.id }
        pending.append(.connection(connection))
    }

    mutating func closeAll(controller: UInt16, moment: CaptureMoment) {
        for key in open.keys.filter({ $0.controller == controller }).sorted(by: { open[$0]!.id < open[$1]!.id }) {
            close(key, reason: nil, moment: moment)
        }
    }

    /// Changes an open connection and reports it.
    mutating func update(_ key: HandleKey, _ change: (inout CaptureConnection) -> Void) {
        guard var connection = open[key] else { return }
        change(&connection)
        open[key] = connection
        pending.append(.connection(connection))
    }

    /// The connection ACL data on `key` belongs to, made up when no event opened one and the data is on an
    /// LE fixed channel; nil (noted once) otherwise.
    mutating func connectionForData(_ key: HandleKey, channel: UInt16, moment: CaptureMoment) -> CaptureConnection? {
        if let connection = open[key] { return connection }
        guard [L2CAPChannel.att, L2CAPChannel.leSignalling, L2CAPChannel.smp].contains(channel) else {
            if ignoredHandles.insert(key).inserted {
                note(.unknownHandle(controller: key.controller, handle: key.handle, frame: moment.frame))
            }
            return nil
        }
        let target = createTargets[key.controller]
        // A phone is the central until a discovery request says otherwise.
        let connection = openConnection(
            controller: key.controller, handle: key.handle, link: .le,
            origin: .aclData(peerFromCreateConnection: target != nil), peer: target,
            role: .central, roleInferred: true, moment: moment)
        createTargets[key.controller] = nil
        note(.connectionFromACLData(connection: connection.id, controller: key.controller, handle: key.handle, frame: moment.frame))
        return connection
    }
}
