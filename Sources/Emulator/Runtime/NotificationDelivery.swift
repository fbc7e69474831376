import BlueZ
import Bluetooth
import Profile

/// The last step of a notification's way out, after the faults: cut to the recipients' ATT MTU, written to their
/// notification sockets (AcquireNotify) or sent as a PropertiesChanged signal, kept in order across sockets, and
/// logged as it left.
final class NotificationDelivery: NotificationSender {
    /// The characteristic whose sockets took the latest notification (see ``keepOrderAcrossSockets(before:in:)``).
    var lastSocketCharacteristic: CharacteristicID?
    /// How long a notification waits for bluetoothd to read another characteristic's socket.
    let orderWait: Duration

    init(orderWait: Duration = NotificationDelivery.socketOrderWait) {
        self.orderWait = orderWait
    }

    func send(_ notification: OutgoingNotification, in runtime: isolated Emulator) async {
        for piece in pieces(notification, in: runtime) {
            await deliver(
                notification.characteristic, value: piece, central: notification.target.address, indicate: notification.indicate,
                in: runtime)
        }
    }

    /// A value as it must leave for its recipients: whole when it fits every recipient's ATT MTU (or no MTU is known);
    /// in pieces for a characteristic with `fragment`; else whole, with a note that BlueZ will cut it — gattemu never
    /// lets that truncation pass silently. What fits: MTU − 3 bytes in an indication; MTU − 5 in a notification
    /// (``ATTMTU/multipleNotificationPayload``: what bluetoothd sends a BlueZ central, which takes several
    /// notifications per PDU; a phone gets up to MTU − 3, so pieces of MTU − 5 fit every central).
    func pieces(_ notification: OutgoingNotification, in runtime: isolated Emulator) -> [[UInt8]] {
        let value = notification.value
        let characteristic = notification.characteristic
        // Every central can take 18 bytes (the minimum ATT MTU, 23, less 5): the common case costs one comparison, and
        // only a longer value asks who the recipients are.
        guard value.count > ATTMTU.minimum.multipleNotificationPayload else { return [value] }
        let recipients = runtime.recipients(of: notification)
        guard let mtu = runtime.centrals.smallestMTU(of: recipients) else { return [value] }
        let size = max(1, notification.indicate ? mtu.payload : mtu.multipleNotificationPayload)
        guard value.count > size else { return [value] }
        let what = notification.indicate ? "indication" : "notification"
        let limit = notification.indicate ? "ATT MTU \(mtu) − 3" : "ATT MTU \(mtu) − 5"
        if runtime.profile.characteristic(characteristic)?.fragment == true {
            let pieces = stride(from: 0, to: value.count, by: size).map { Array(value[$0..<min($0 + size, value.count)]) }
            runtime.log.record(
                .note, characteristic: characteristic, value: value,
                detail: "\(what) of \(value.count) bytes sent in \(pieces.count) pieces of at most \(size) (\(limit)"
                    + (notification.indicate ? ")" : ": fits a central that takes several notifications per PDU)"))
            return pieces
        }
        let who = recipients.filter { runtime.centrals.mtu(of: $0) == mtu }.map(\.description).joined(separator: ",")
        let detail =
            value.count > mtu.payload
            ? "\(what) of \(value.count) bytes is longer than ATT MTU \(mtu) − 3 of \(who): BlueZ sends only the first \(mtu.payload) bytes"
            : "\(what) of \(value.count) bytes is longer than \(limit) of \(who): a central that takes several notifications per PDU "
                + "(a BlueZ central) gets only the first \(size) bytes from bluetoothd"
        runtime.log.record(
            .note, central: recipients.count == 1 ? recipients[0] : nil, characteristic: characteristic, value: value,
            detail: detail + " (\"fragment\": true sends it in pieces)")
        return [value]
    }

    /// Hands one value to BlueZ and logs how it left. Socket writes happen without leaving the actor, so the
    /// log keeps them in order with the events around them (a disconnection the notification preceded); only a
    /// switch of characteristic mid-burst may first wait for bluetoothd (``keepOrderAcrossSockets(before:in:)``).
    func deliver(
        _ characteristic: CharacteristicID, value: [UInt8], central address: BluetoothAddress?, indicate: Bool,
        in runtime: isolated Emulator
    ) async {
        await keepOrderAcrossSockets(before: characteristic, in: runtime)
        let log = runtime.log
        do {
            var delivery = try runtime.application?.notifyOnSockets(characteristic, value: value, central: address)
            if case .sockets(let centrals, _)? = delivery, !centrals.isEmpty { lastSocketCharacteristic = characteristic }
            if delivery == nil, let application = runtime.application {
                delivery = try await application.notify(characteristic, value: value, central: address)
            }
            let what = indicate ? "indication" : "notification"
            if case .sockets(_, let dropped)? = delivery {
                for (socket, count) in dropped.sorted(by: { $0.key < $1.key }) {
                    log.record(
                        .note, central: socket.central ?? address, characteristic: characteristic, value: value,
                        detail: "\(what) dropped: the central is not reading its notification socket (\(count) dropped on it so far)")
                }
            }
            if case .sockets(let centrals, let dropped)? = delivery, centrals.isEmpty {
                if dropped.isEmpty {
                    log.record(
                        .note, central: address, characteristic: characteristic, value: value,
                        detail: "\(what) not sent: no notification socket for this central")
                }
                return
            }
            let how =
                switch delivery {
                case .sockets(let centrals, _)?:
                    "AcquireNotify socket" + (centrals.count == 1 ? "" : "s") + " " + centrals.map(\.description).joined(separator: ",")
                case .propertiesChanged?: "PropertiesChanged"
                case nil: "not sent (no GATT application)"
                }
            runtime.recordOperation(
                indicate ? .indicate : .notify, central: address, attribute: GattAttributeID(characteristic: characteristic), value: value,
                detail: how)
        } catch {
            log.record(.error, characteristic: characteristic, detail: "notification failed: \(error)")
        }
    }

    /// Before a notification on another characteristic than the latest one sent on a socket: waits (at most
    /// ``orderWait``, sleeping, never blocking the loop) until bluetoothd has read that one's socket.
    /// bluetoothd serves each characteristic's socket on its own, so a burst A, B, A could reach the central as
    /// A, A, B (seen replaying a real capture); what it has read is in its ATT queue, which keeps order.
    /// A burst on one characteristic costs nothing here. bluetoothd reads a socket whether or not the central reads
    /// its notifications, so only a bluetoothd that is not running soon enough makes this wait long; when it gives
    /// up, the log says so (the central may then get the two out of order).
    func keepOrderAcrossSockets(before characteristic: CharacteristicID, in runtime: isolated Emulator) async {
        guard let last = lastSocketCharacteristic, last != characteristic, let application = runtime.application,
            application.unreadNotificationBytes(last) > 0
        else { return }
        let clock = ContinuousClock()
        let deadline = clock.now + orderWait
        while application.unreadNotificationBytes(last) > 0, clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(1))
        }
        let unread = application.unreadNotificationBytes(last)
        guard unread > 0 else { return }
        runtime.log.record(
            .note, characteristic: characteristic,
            detail: "notification on \(characteristic) sent while \(unread) bytes of \(last)'s notification socket were still unread "
                + "after \(orderWait) (bluetoothd did not run in time): the central may get them out of order")
    }

    /// The longest a notification waits for bluetoothd to read another characteristic's socket. 50 ms was too short
    /// on a loaded machine: a burst alternating two characteristics reached the central 2 in 240 out of order (the
    /// `--full` run of 2026-11-30, test_a_burst_over_two_characteristics_arrives_in_the_rules_order), silently.
    static let socketOrderWait: Duration = .seconds(1)
}

extension Emulator {
    /// Who a notification goes to: its one central, else the characteristic's subscribers, else every connected
    /// central (a notification the profile sends with nobody subscribed goes to whoever is connected).
    func recipients(of notification: OutgoingNotification) -> [BluetoothAddress] {
        notification.target.address.map { [$0] }
            ?? engine.subscribers[notification.characteristic]?.map(\.address) ?? centrals.connected
    }

    /// Sends a notification or indication down the pipeline's way out: the faults, then the delivery.
    func sendNotification(_ characteristic: CharacteristicID, value: [UInt8], target: NotificationTarget, indicate: Bool) async {
        await pipeline.outbound.send(
            OutgoingNotification(characteristic: characteristic, value: value, target: target, indicate: indicate), in: self)
    }
}
