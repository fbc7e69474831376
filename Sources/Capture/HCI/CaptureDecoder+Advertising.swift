import Bluetooth

/// LE advertising reports: legacy (0x02, every report of the event), directed (0x0B), extended (0x0D,
/// fragments joined).
extension CaptureDecoder {
    mutating func advertisingReports(_ body: inout ByteCursor, subevent: UInt8, controller: UInt16, moment: CaptureMoment) {
        guard let count = body.u8() else {
            return report(.malformedEvent(code: 0x3E, "advertising report without a count"), frame: moment.frame)
        }
        for index in 0..<Int(count) {
            let parsed: (AdvertisingReport, UInt8)?
            switch subevent {
            case 0x02: parsed = legacyReport(&body, controller: controller, moment: moment)
            case 0x0B: parsed = directedReport(&body, controller: controller, moment: moment)
            default: parsed = extendedReport(&body, controller: controller, moment: moment)
            }
            guard let (report, status) = parsed else {
                return self.report(
                    .malformedEvent(
                        code: 0x3E, "advertising report \(index + 1) of \(count) (subevent 0x\(Hex.byte(subevent))) is malformed"),
                    frame: moment.frame)
            }
            if let whole = advertising.add(report, status: status) { emitReport(whole) }
        }
    }

    mutating func emitReport(_ report: AdvertisingReport) {
        var report = report
        let (data, problem) = AdvertisingData.parse(report.data)
        report.advertisingData = data
        report.dataProblem = problem
        statistics.advertisingReports += report.fragments
        pending.append(.advertisingReport(report))
    }

    private func base(
        controller: UInt16, moment: CaptureMoment, address: DeviceAddress, subevent: AdvertisingReport.Subevent,
        eventType: UInt16, properties: AdvertisingEventProperties
    ) -> AdvertisingReport {
        AdvertisingReport(
            frame: moment.frame, timestamp: moment.timestamp, controller: controller, address: address, subevent: subevent,
            eventType: eventType, properties: properties, rssi: nil, txPower: nil, advertisingSID: nil,
            directAddress: nil, data: [], dataStatus: .complete, fragments: 1, advertisingData: AdvertisingData(),
            dataProblem: nil)
    }

    /// Event type, address type, address, data length, data, RSSI.
    private func legacyReport(_ body: inout ByteCursor, controller: UInt16, moment: CaptureMoment) -> (AdvertisingReport, UInt8)? {
        guard let type = body.u8(), let addressType = body.u8(), let address = body.address(),
            let peer = DeviceAddress(address, hciType: addressType), let length = body.u8(), let data = body.take(Int(length)),
            let rssi = body.i8()
        else { return nil }
        var report = base(
            controller: controller, moment: moment, address: peer, subevent: .legacy, eventType: UInt16(type),
            properties: AdvertisingEventProperties(legacyEventType: type))
        report.data = Array(data)
        report.rssi = rssi == 127 ? nil : rssi
        return (report, 0)
    }

    /// Event type, address type, address, direct address type, direct address, RSSI.
    private func directedReport(_ body: inout ByteCursor, controller: UInt16, moment: CaptureMoment) -> (AdvertisingReport, UInt8)? {
        guard let type = body.u8(), let addressType = body.u8(), let address = body.address(),
            let peer = DeviceAddress(address, hciType: addressType), let directType = body.u8(), let direct = body.address(),
            let rssi = body.i8()
        else { return nil }
        var report = base(
            controller: controller, moment: moment, address: peer, subevent: .directed, eventType: UInt16(type),
            properties: AdvertisingEventProperties(legacyEventType: type))
        report.directAddress = DeviceAddress(direct, hciType: directType)
        report.rssi = rssi == 127 ? nil : rssi
        return (report, 0)
    }

    /// Event type (16 bits), address type, address, primary and secondary PHY, SID, TX power, RSSI,
    /// periodic interval, direct address type and address, data length, data.
    private func extendedReport(_ body: inout ByteCursor, controller: UInt16, moment: CaptureMoment) -> (AdvertisingReport, UInt8)? {
        guard let type = body.u16le(), let addressType = body.u8(), let address = body.address(),
            let peer = DeviceAddress(address, hciType: addressType), let primaryPHY = body.u8(), let secondaryPHY = body.u8(),
            let sid = body.u8(), let txPower = body.i8(),
            let rssi = body.i8(), body.skip(2), let directType = body.u8(), let direct = body.address(), let length = body.u8(),
            let data = body.take(Int(length))
        else { return nil }
        var report = base(
            controller: controller, moment: moment, address: peer, subevent: .extended, eventType: type,
            properties: AdvertisingEventProperties(rawValue: type & 0x1F))
        report.data = Array(data)
        report.rssi = rssi == 127 ? nil : rssi
        report.txPower = txPower == 127 ? nil : txPower
        report.advertisingSID = sid == 0xFF ? nil : sid
        report.primaryPHY = primaryPHY
        report.secondaryPHY = secondaryPHY
        if report.properties.contains(.directed) { report.directAddress = DeviceAddress(direct, hciType: directType) }
        return (report, UInt8((type >> 5) & 0b11))
    }
}
