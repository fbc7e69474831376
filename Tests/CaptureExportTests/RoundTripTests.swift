import Bluetooth
import Capture
import CaptureExport
import CaptureImport
import Foundation
import Replica
import Testing

/// The exported capture imports back into the same device: `gattemu import` is the judge of what the file says.
@Suite struct RoundTripTests {
    static func export(_ replica: DeviceReplica = RelaySession.replica()) -> BTSnoopExport.Output {
        BTSnoopExport.write(replica, central: RelaySession.phone, start: RelaySession.start)
    }

    @Test func importGivesTheSameProfile() throws {
        let original = RelaySession.replica()
        let output = Self.export(original)
        #expect(output.notes.isEmpty, "\(output.notes)")
        let (imported, trace) = try Judge.imported(output.bytes)
        #expect(trace.problems.isEmpty)
        #expect(trace.statistics.firstTimestamp == RelaySession.start)
        let expected = Judge.withoutDescriptions(ReplicaProfile(original).build().json).profileText()
        let actual = Judge.withoutDescriptions(ReplicaProfile(imported).build().json).profileText()
        #expect(actual == expected)
        // The profile holds what is compared: pinned handles, the long value, replay rules, security.
        #expect(expected.contains("\"handle\": 17"))
        #expect(expected.contains(Hex.string(RelaySession.longValue)))
        #expect(expected.contains("\"rules\""))
        #expect(expected.contains("\"security\""))
    }

    @Test func importGivesTheSameDevice() throws {
        let original = RelaySession.replica()
        let (imported, _) = try Judge.imported(Self.export(original).bytes)
        #expect(imported.address == original.address)
        #expect(imported.addressType == original.addressType)
        #expect(imported.name == original.name)
        #expect(imported.mtu == original.mtu)
        #expect(imported.advertisingData == original.advertisingData)
        #expect(imported.scanResponse == original.scanResponse)
        #expect(imported.security == original.security)
        // The table: every service, characteristic and descriptor with its handles and values.
        func table(_ replica: DeviceReplica) -> [String] {
            replica.services.flatMap { service in
                [
                    "service \(service.uuid) \(service.isPrimary) \(service.handle ?? 0)-\(service.endHandle ?? 0) includes \(service.includes)"
                ]
                    + service.characteristics.flatMap { characteristic in
                        [
                            "  characteristic \(characteristic.uuid) \(characteristic.properties.rawValue) \(characteristic.declarationHandle ?? 0)/\(characteristic.valueHandle ?? 0) "
                                + "\(characteristic.value.map { Hex.string($0) } ?? "-") \(characteristic.security)"
                        ]
                            + characteristic.descriptors.map {
                                "    descriptor \($0.uuid) \($0.handle ?? 0) \($0.value.map { Hex.string($0) } ?? "-")"
                            }
                    }
            }
        }
        #expect(table(imported) == table(original))
        // The conversation, event for event with its connection and time (to the microsecond); the import adds
        // the reads of values the conversation did not show (the device name, the user description) at discovery.
        func events(_ replica: DeviceReplica) -> [String] {
            replica.conversation.map { event in
                let kind: String
                if case .connected = event.kind { kind = "connected" } else { kind = "\(event.kind)" }
                return "\(event.connection) \(kind)"
            }
        }
        // The secret's read is refused first: its security, shown at discovery (the conversation refuses it later, too).
        let added = [
            "1 error(handle: 0x0016, request: Read Request, code: insufficient encryption)",
            "1 read(handle: 0x0003, offset: 0, value: \(Array("RelayLock".utf8)))",
            "1 read(handle: 0x000f, offset: 0, value: \(Array("Status".utf8)))",
        ]
        var expected = events(original)
        expected.insert(contentsOf: added, at: 1)
        #expect(events(imported) == expected)
        let times = imported.conversation.compactMap(\.time).filter { $0 >= 0.5 }
        let originalTimes = original.conversation.compactMap(\.time).filter { $0 >= 0.5 }
        #expect(times.count == originalTimes.count)
        for (time, originalTime) in zip(times, originalTimes) { #expect(abs(time - originalTime) < 0.000_1) }
    }

    /// Security the recording knows but its conversation does not show (the relay learnt it while it read the
    /// table, before the session): refusals at discovery, before and after the encryption, carry it into the import.
    @Test func securityLearntBeforeTheSessionSurvivesTheImport() throws {
        var original = RelaySession.replica()
        original.conversation.removeAll { if case .error(_, _, let code) = $0.kind { code.asksForSecurity } else { false } }
        var levels: [CharacteristicSecurity] = []
        for service in original.services.indices {
            for index in original.services[service].characteristics.indices {
                var characteristic = original.services[service].characteristics[index]
                switch characteristic.uuid {
                case RelaySession.secret: characteristic.security.read = .authenticated
                case BluetoothUUID(0xFFF1): characteristic.security.indicate = .encrypted
                case RelaySession.long:
                    characteristic.security.read = .encrypted
                    characteristic.security.write = .authenticated
                default: continue
                }
                levels.append(characteristic.security)
                original.services[service].characteristics[index] = characteristic
            }
        }
        #expect(levels.count == 3)
        let (imported, _) = try Judge.imported(Self.export(original).bytes)
        func security(_ replica: DeviceReplica) -> [String] {
            replica.services.flatMap(\.characteristics).map { "\($0.uuid) \($0.security)" }
        }
        #expect(security(imported) == security(original))
        let expected = Judge.withoutDescriptions(ReplicaProfile(original).build().json).profileText()
        let actual = Judge.withoutDescriptions(ReplicaProfile(imported).build().json).profileText()
        #expect(actual == expected)
        #expect(expected.contains("encrypt-authenticated-read") && expected.contains("encrypt-indicate"))
    }

    /// An authenticated level learnt from a device bonded before the recording (no pairing seen, no encryption
    /// recorded) still needs an encrypted link under its refusal: the import reads it as authenticated, not encrypted.
    @Test func anAuthenticatedLevelWithoutRecordedPairingSurvivesTheImport() throws {
        var original = RelaySession.replica()
        original.conversation.removeAll { if case .error(_, _, let code) = $0.kind { code.asksForSecurity } else { false } }
        original.security = DeviceReplica.SecurityObservation()
        for service in original.services.indices {
            for index in original.services[service].characteristics.indices
            where original.services[service].characteristics[index].uuid == RelaySession.secret {
                original.services[service].characteristics[index].security.read = .authenticated
            }
        }
        let (imported, _) = try Judge.imported(Self.export(original).bytes)
        let secret = imported.services.flatMap(\.characteristics).first { $0.uuid == RelaySession.secret }
        #expect(secret?.security.read == .authenticated)
    }

    /// The CLI: `gattemu import FILE -o PROFILE` of a written file gives the profile made straight from the replica.
    @Test func gattemuImportOfTheFile() throws {
        let original = RelaySession.replica()
        let capture = try Judge.file(Self.export(original).bytes)
        let profile = capture + ".json"
        defer {
            try? FileManager.default.removeItem(atPath: capture)
            try? FileManager.default.removeItem(atPath: profile)
        }
        let outcome = try Judge.run([try Judge.gattemu, "import", capture, "-o", profile])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let written = try String(contentsOfFile: profile, encoding: .utf8)
        let fromFile = try #require(try JSONSerialization.jsonObject(with: Data(written.utf8)) as? [String: Any])
        let direct = try #require(
            try JSONSerialization.jsonObject(with: Data(ReplicaProfile(original).build().text.utf8)) as? [String: Any])
        func stripped(_ value: Any) -> Any {
            if let object = value as? [String: Any] {
                return object.filter { $0.key != "description" }.mapValues(stripped)
            }
            if let array = value as? [Any] { return array.map(stripped) }
            return value
        }
        #expect(
            NSDictionary(dictionary: stripped(fromFile) as! [String: Any]) == NSDictionary(dictionary: stripped(direct) as! [String: Any]))
        let validated = try Judge.run([try Judge.gattemu, "validate", profile])
        #expect(validated.status == 0, "\(validated.stdout)\(validated.stderr)")
    }
}
