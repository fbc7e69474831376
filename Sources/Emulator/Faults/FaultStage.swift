import BlueZ
import Bluetooth
import Profile

/// The faults as a stage of the pipeline, around whatever answers (the profile's rules, a relayed device), in both
/// directions: on the way in it delays, drops, refuses or changes a read or write before the responder sees it and
/// changes the answer after; it disconnects a central as it connects; on the way out it delays, drops, duplicates,
/// reorders or changes a notification before delivery. What the faults decide comes from the fault engine
/// (``Emulator/faultState``), which the control API fills.
final class FaultStage: GattMiddleware {
    func read(_ operation: ReadOperation, in runtime: isolated Emulator, next: any GattResponder) async throws(ATTError) -> [UInt8] {
        let plan = try await runtime.applyFaults(.read, operation.attribute, operation.central)
        let bytes = try await next.read(operation, in: runtime)
        return runtime.mutated(
            bytes, by: plan, central: operation.central.address, characteristic: operation.attribute.characteristic,
            descriptor: operation.attribute.descriptor)
    }

    func write(_ operation: WriteOperation, in runtime: isolated Emulator, next: any GattResponder) async throws(ATTError) {
        let plan = try await runtime.applyFaults(.write, operation.attribute, operation.central, answerable: !operation.acknowledged)
        var changed = operation
        changed.value = runtime.mutatedWrite(
            operation.value, by: plan, central: operation.central.address, characteristic: operation.attribute.characteristic,
            descriptor: operation.attribute.descriptor)
        try await next.write(changed, in: runtime)
    }

    func link(_ event: LinkEvent, in runtime: isolated Emulator, next: any GattResponder) async {
        if case .connected(let central) = event { runtime.applyConnectFaults(central.address) }
        await next.link(event, in: runtime)
    }

    func notify(_ notification: OutgoingNotification, in runtime: isolated Emulator, next: any NotificationSender) async {
        let characteristic = notification.characteristic
        let address = notification.target.address
        let recipients = runtime.recipients(of: notification)
        let plan = runtime.faultState.engine.plan(
            for: FaultOperation(notification.indicate ? .indicate : .notify, characteristic: characteristic, centrals: recipients))
        if !plan.isEmpty {
            runtime.record(plan, central: address, characteristic: characteristic)
            if plan.disconnect { runtime.scheduleDisconnect(recipients) }
            if plan.delayMilliseconds > 0 { try? await Task.sleep(for: .milliseconds(plan.delayMilliseconds)) }
        }
        // Logs a cut; the fault engine mutates the value again below.
        _ = runtime.mutated(notification.value, by: plan, central: address, characteristic: characteristic)
        let values = runtime.faultState.engine.notificationValues(notification.value, characteristic: characteristic, plan: plan)
        if values.isEmpty {
            let what = notification.indicate ? "indication" : "notification"
            runtime.log.record(
                .note, central: address, characteristic: characteristic, value: notification.value,
                detail: plan.drop ? "\(what) dropped" : "\(what) held back (reorder)")
        }
        for bytes in values {
            var changed = notification
            changed.value = bytes
            await next.send(changed, in: runtime)
        }
    }
}

extension NotificationTarget {
    /// The one central a notification is for; nil for every subscriber.
    var address: BluetoothAddress? {
        if case .central(let id) = self { id.address } else { nil }
    }
}
