import Bluetooth
import Testing

@testable import Profile

/// The profile fields imported and cloned devices need: pinned handles, other AD structures, `closestTo`.
@Suite struct ImportedProfileFieldTests {
    static func profile(services: String = "", advertisement: String = "", rules: String = "") -> String {
        """
        { "format": 1,
          "advertisements": [ { "localName": "x"\(advertisement) } ],
          "services": [ { "id": "s", "uuid": "180f", "handle": 16\(services), "characteristics": [
            { "id": "rx", "uuid": "2a19", "flags": ["write", "notify"], "handle": 18 },
            { "id": "tx", "uuid": "2a1a", "flags": ["read"], "handle": 21, "descriptors": [ { "type": "user-description", "text": "t", "handle": 22 } ] }
          ] } ],
          "rules": [\(rules)] }
        """
    }

    @Test func handlesAreReadAndChecked() throws {
        let profile = try loadProfile(Self.profile())
        #expect(profile.services[0].handle == 16)
        #expect(profile.characteristics.map(\.handle) == [18, 21])
        #expect(profile.characteristics[1].descriptors[0].handle == 22)
        // The same handle twice; a value handle that leaves no room for its declaration; out of range.
        let twice = problems(Self.profile().replacingOccurrences(of: "\"handle\": 22", with: "\"handle\": 18"))
        #expect(twice.contains { $0.contains("handle 18 is asked for twice") }, "\(twice)")
        let crowded = problems(Self.profile().replacingOccurrences(of: "\"handle\": 18", with: "\"handle\": 17"))
        #expect(crowded.contains { $0.contains("must leave room after 16") }, "\(crowded)")
        let outOfRange = problems(Self.profile().replacingOccurrences(of: "\"handle\": 16", with: "\"handle\": 70000"))
        #expect(outOfRange.contains { $0.contains("services[0].handle") }, "\(outOfRange)")
        // A service at the last handle leaves no room for a characteristic (this used to overflow and crash).
        let last = problems(Self.profile().replacingOccurrences(of: "\"handle\": 16", with: "\"handle\": 65535"))
        #expect(last.contains { $0.contains("handle 18 must leave room after 65535") }, "\(last)")
    }

    @Test func otherADStructuresAreAdvertisedButNotThoseOfOtherFields() throws {
        let profile = try loadProfile(Self.profile(advertisement: #", "data": { "0x24": { "hex": "abcd" }, "38": "01" }"#))
        let specs = profile.advertisements(
            variant: nil, environment: EngineEnvironment(adapterAddress: BluetoothAddress("00:00:00:00:00:01")!))
        #expect(specs.first?.data == [0x24: [0xAB, 0xCD], 38: [0x01]])
        let reserved = problems(Self.profile(advertisement: #", "data": { "0xff": "0102" }"#))
        #expect(reserved.contains { $0.contains("AD type 0xff is built from another field") }, "\(reserved)")
        // bluetoothd refuses a whole advertisement with one of these (a real bed base advertises 0x12).
        for type in ["0x12", "0x1a", "42", "0x0d"] {
            let refused = problems(Self.profile(advertisement: #", "data": { "\#(type)": "08002000" }"#))
            #expect(
                refused.contains { $0.contains("AD type \(type) (") && $0.contains("does not let an application advertise") }, "\(refused)")
        }
    }

    @Test func closestToPicksTheNearestRecordingAmongThoseThatCouldFire() throws {
        let rules = """
            { "id": "exact", "on": { "write": "rx", "equals": "0102" }, "do": { "log": "exact" } },
            { "id": "a", "on": { "write": "rx", "closestTo": { "hex": "01 02 03 04" } }, "otherwise": true, "do": { "log": "a" } },
            { "id": "b", "on": { "write": "rx", "closestTo": { "hex": "ff ff ff ff" } }, "otherwise": true, "do": { "log": "b" } },
            { "id": "c", "on": { "write": "rx", "closestTo": { "hex": "01 02 03 05" } }, "otherwise": true, "when": { "state": "armed", "equals": true }, "do": { "log": "c" } }
            """
        let json = Self.profile(rules: rules).replacingOccurrences(
            of: "\"format\": 1,", with: "\"format\": 1, \"state\": { \"armed\": false },")
        var engine = BehaviourEngine(
            profile: try loadProfile(json), environment: EngineEnvironment(adapterAddress: BluetoothAddress("00:00:00:00:00:01")!))
        let central = CentralID(address: BluetoothAddress("00:00:00:00:00:02")!)
        func fired(_ value: [UInt8]) -> [String] {
            engine.handle(.write(characteristic: "rx", central: central, value: value, withResponse: true)).firedRules
        }
        #expect(fired([1, 2]) == ["exact"], "a recorded write is answered as recorded")
        #expect(fired([1, 2, 3, 5]) == ["a"], "c would be closer, but its condition does not hold")
        #expect(fired([0xFF, 0xFF, 0xFF, 0x00]) == ["b"])
        #expect(fired([9, 9, 9, 9, 9]) == ["a"], "a tie goes to the first in the file")
        let template = problems(Self.profile(rules: #"{ "on": { "write": "rx", "closestTo": "01 {request[0]}" }, "do": { "log": "x" } }"#))
        #expect(template.contains { $0.contains("closestTo takes fixed bytes") }, "\(template)")
    }
}
