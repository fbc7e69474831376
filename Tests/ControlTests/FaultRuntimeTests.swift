import Bluetooth
import Control
import DBus
import Emulator
import Foundation
import Profile
import Testing

@testable import BlueZ

let testCentral = "AA:BB:CC:DD:EE:01"

func gattRead(_ characteristic: CharacteristicID) -> GattReadRequest {
    GattReadRequest(
        attribute: GattAttributeID(characteristic: characteristic), offset: 0,
        context: GattRequestContext(central: BluetoothAddress("AA:BB:CC:DD:EE:01"), mtu: ATTMTU(rawValue: 185)))
}

func gattWrite(_ characteristic: CharacteristicID, _ value: [UInt8], acknowledged: Bool = false) -> GattWriteRequest {
    GattWriteRequest(
        attribute: GattAttributeID(characteristic: characteristic), value: value, offset: 0, kind: .request,
        bluetoothdAnswered: acknowledged, prepareAuthorize: false,
        context: GattRequestContext(central: BluetoothAddress("AA:BB:CC:DD:EE:01"), mtu: ATTMTU(rawValue: 185)))
}

/// Faults installed through the API, observed where the runtime answers reads, writes and notifications.
@Suite struct FaultRuntimeTests {
    @Test func injectedWriteErrorReachesTheCentralOnce() async throws {
        let emulator = try makeEmulator("bleproof")
        try await withAPI(emulator) { client in
            let (status, _) = try await client.call(
                .post, "/v1/faults", json: #"{"on": "write", "characteristic": "config", "nth": 2, "error": "0x81"}"#)
            #expect(status == .created)
        }
        var outcomes: [ATTError?] = []
        for _ in 0..<3 {
            do {
                try await emulator.write(gattWrite("config", Array(#"{"interval": 1}"#.utf8)))
                outcomes.append(nil)
            } catch {
                outcomes.append(error)
            }
        }
        #expect(outcomes == [nil, .application(0x81), nil])
        let faults = emulator.events.events.filter { $0.kind == .fault }
        #expect(faults.count == 1)
        #expect(faults.first?.central?.description == testCentral)
        #expect(faults.first?.characteristic == "config")
        #expect(faults.first?.detail == "f1 error 0x81 (write #2)")
        let status = await emulator.status()
        #expect(status.faults.first?.fired == 1)
        #expect(status.faults.first?.exhausted == true)
    }

    @Test func errorOnAnAcknowledgedWriteIsOnlyLogged() async throws {
        let emulator = try makeEmulator()
        _ = try await emulator.addFault(FaultSpec(on: .write, scope: FaultScope(characteristic: "rx"), action: .error(.notAuthorized)))
        try await emulator.write(gattWrite("rx", [0x01], acknowledged: true))
        #expect(emulator.events.events.contains { $0.kind == .note && $0.detail?.contains("not delivered") == true })
    }

    @Test func readAnswersCanBeCorruptedAndTruncated() async throws {
        let emulator = try makeEmulator()
        try await emulator.setValue(characteristic: "session", value: [0x10, 0x20, 0x30, 0x40])
        _ = try await emulator.addFault(
            FaultSpec(on: .read, scope: FaultScope(characteristic: "session"), action: .corrupt(.xor(at: 0, mask: [0xFF]))))
        _ = try await emulator.addFault(FaultSpec(on: .read, scope: FaultScope(characteristic: "session", count: 1), action: .truncate(2)))
        #expect(try await emulator.read(gattRead("session")) == [0xEF, 0x20])
        #expect(try await emulator.read(gattRead("session")) == [0xEF, 0x20, 0x30, 0x40])
        #expect(await emulator.status().faults.map(\.fired) == [2, 1])
    }

    @Test func delayedReadTakesLonger() async throws {
        let emulator = try makeEmulator()
        _ = try await emulator.addFault(FaultSpec(on: .read, action: .delay(minMilliseconds: 150, maxMilliseconds: 150)))
        let clock = ContinuousClock()
        let elapsed = try await clock.measure { _ = try await emulator.read(gattRead("tx")) }
        #expect(elapsed >= .milliseconds(150))
    }

    @Test func droppedNotificationIsNotSentButTheNextOneIs() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            _ = try await client.call(.post, "/v1/faults", json: #"{"on": "notify", "characteristic": "tx", "nth": 2, "drop": true}"#)
            for hex in ["01", "02", "03"] {
                let (status, _) = try await client.call(.post, "/v1/characteristics/tx/notify", json: "{\"hex\": \"\(hex)\"}")
                #expect(status == .ok)
            }
        }
        let sent = emulator.events.events.filter { $0.kind == .notify }.map(\.value)
        #expect(sent == [[1], [3]])
        #expect(emulator.events.events.contains { $0.kind == .note && $0.detail == "notification dropped" && $0.value == [2] })
    }

    @Test func reorderedAndDuplicatedNotifications() async throws {
        let emulator = try makeEmulator()
        _ = try await emulator.addFault(FaultSpec(on: .notify, scope: FaultScope(nth: 1, count: 1), action: .reorder))
        _ = try await emulator.addFault(FaultSpec(on: .notify, scope: FaultScope(nth: 3, count: 1), action: .duplicate(copies: 1)))
        for byte: UInt8 in 1...3 { try await emulator.notify(characteristic: "tx", value: [byte], indicate: false) }
        let sent = emulator.events.events.filter { $0.kind == .notify }.map(\.value)
        #expect(sent == [[2], [1], [3], [3]])
    }

    @Test func seededProbabilisticFaultsReplayTheSameSequence() async throws {
        func run() async throws -> [String] {
            let emulator = try makeEmulator(seed: 11)
            try await withAPI(emulator) { client in
                _ = try await client.call(.post, "/v1/faults", json: #"{"on": "notify", "probability": 0.5, "drop": true}"#)
                for index in 0..<20 {
                    _ = try await client.call(
                        .post, "/v1/characteristics/tx/notify", json: "{\"hex\": \"\(String(format: "%02x", index))\"}")
                }
            }
            return emulator.events.events.filter { $0.kind == .fault }.compactMap(\.detail)
        }
        let first = try await run()
        #expect(!first.isEmpty && first.count < 20)
        #expect(first == (try await run()))
    }

    @Test func statusReportsCentralsWithMTUAndSubscriptions() async throws {
        let emulator = try makeEmulator()
        _ = try await emulator.read(gattRead("tx"))
        let status = await emulator.status()
        // No connection event came from BlueZ here, so the central is not listed as connected.
        #expect(status.centrals.isEmpty)
        #expect(status.lastEvent > 0)
    }

    @Test func mtuIsLoggedWhenFirstSeenAndWhenItChanges() async throws {
        let emulator = try makeEmulator()
        _ = try await emulator.read(gattRead("tx"))
        _ = try await emulator.read(gattRead("tx"))
        let bigger = GattReadRequest(
            attribute: GattAttributeID(characteristic: "tx"), offset: 0,
            context: GattRequestContext(central: BluetoothAddress("AA:BB:CC:DD:EE:01"), mtu: ATTMTU(rawValue: 517)))
        _ = try await emulator.read(bigger)
        let mtus = emulator.events.events.filter { $0.kind == .mtu }
        #expect(mtus.map(\.detail) == ["185", "517"])
        #expect(mtus.allSatisfy { $0.central?.description == testCentral })
        // The MTU event comes before the read that revealed it.
        let kinds = emulator.events.events.map(\.kind).filter { $0 == .mtu || $0 == .read }
        #expect(kinds == [.mtu, .read, .read, .mtu, .read])
    }
}

@Suite struct EventLogTests {
    @Test func sequenceNumbersAndSubscriptions() async throws {
        let log = try EventLog(format: .json)
        log.record(.note, detail: "a")
        let stream = log.subscribe(since: 0)
        log.record(.note, detail: "b")
        var seen: [Int] = []
        for await event in stream {
            seen.append(event.sequence)
            if seen.count == 2 { break }
        }
        #expect(seen == [1, 2])
        #expect(log.events(since: 1).map(\.detail) == ["b"])
        #expect(log.lastSequence == 2)
        #expect(log.events.last?.json.contains("\"seq\":2") == true)
    }

    @Test func closingEndsSubscriptions() async throws {
        let log = try EventLog(format: .json)
        let stream = log.subscribe()
        log.close()
        var count = 0
        for await _ in stream { count += 1 }
        #expect(count == 0)
    }
}
