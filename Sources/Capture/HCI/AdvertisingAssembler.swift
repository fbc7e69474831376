/// Joins extended-advertising data that the controller split over several reports ("incomplete, more
/// data to come") per controller, advertiser, advertising set and kind (advertising or scan response).
struct AdvertisingAssembler {
    /// The most data an extended advertisement can carry.
    static let maximumData = 1650

    private struct Key: Hashable {
        var controller: UInt16
        var address: DeviceAddress
        var sid: UInt8?
        var scanResponse: Bool
    }

    private var pending: [Key: AdvertisingReport] = [:]

    /// Adds a report with its extended data status (0 complete, 1 more to come, 2 truncated); returns the
    /// whole report once its last fragment is in.
    mutating func add(_ report: AdvertisingReport, status: UInt8) -> AdvertisingReport? {
        let key = Key(
            controller: report.controller, address: report.address, sid: report.advertisingSID, scanResponse: report.isScanResponse)
        var whole = report
        if let earlier = pending.removeValue(forKey: key) {
            whole.data = earlier.data + report.data
            whole.fragments = earlier.fragments + report.fragments
        }
        switch status {
        case 0: whole.dataStatus = .complete
        case 1:
            guard whole.data.count > Self.maximumData else {
                pending[key] = whole
                return nil
            }
            whole.dataStatus = .truncated
        default: whole.dataStatus = .truncated
        }
        return whole
    }

    /// Reports still waiting for fragments, marked incomplete.
    mutating func finish() -> [AdvertisingReport] {
        defer { pending = [:] }
        return pending.values.sorted { $0.frame < $1.frame }.map {
            var report = $0
            report.dataStatus = .incomplete
            return report
        }
    }
}
