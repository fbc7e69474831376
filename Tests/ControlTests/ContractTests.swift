import Bluetooth
import ControlBodies
import ControlContract
import Emulator
import Foundation
import Profile
import Testing

@testable import Control

/// The contract (module ControlContract) against the committed document, the types' own encodings, the
/// server's decoders, the routes and the embedded dashboard files.
@Suite struct ContractTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func encode(_ value: some Encodable) throws -> JSONNode {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try JSONParser.parse(Array(try encoder.encode(value)), file: "encoded")
    }

    @Test func theCommittedDocumentIsWhatTheTypesSay() throws {
        let committed = try String(contentsOf: Self.root.appendingPathComponent("Sources/Control/openapi.json"), encoding: .utf8)
        #expect(
            committed == ControlContract.documentText,
            "Sources/Control/openapi.json differs from the contract: run scripts/embed-assets --openapi")
    }

    /// The runtime's kinds of events, of pairing prompts and of values are the ones the contract names (ContractMapping.swift
    /// maps them by name).
    @Test func theRuntimesKindsAreTheContracts() {
        #expect(EventKind.allCases.map(\.rawValue) == EmulatorEventKind.allCases.map(\.rawValue))
        #expect(PairingPromptKind.allCases.map(\.rawValue) == PairingSnapshot.PromptKind.allCases.map(\.rawValue))
        #expect(EmulatorEventKind.allCases.allSatisfy { EventKind($0).rawValue == $0.rawValue })
        #expect(PairingSnapshot.PromptKind.allCases.allSatisfy { PairingPromptKind($0).rawValue == $0.rawValue })
    }

    /// Each type's examples encode to JSON its schema accepts, and together use every property it declares:
    /// a property added to the type but not the schema (or the other way round) fails here.
    @Test(arguments: ControlContract.types.map { String(describing: $0) })
    func examplesMatchTheirSchema(_ name: String) throws {
        let type = try #require(ControlContract.types.first { String(describing: $0) == name })
        var validator = SchemaValidator()
        let examples = Self.examples(of: type)
        #expect(!examples.isEmpty)
        for example in examples {
            let node = try Self.encode(example)
            #expect(validator.problems(node, type.schema) == [], "\(name): \(node)")
        }
        for (path, declared) in validator.declared {
            #expect(
                validator.seen[path] == declared,
                "\(name) \(path): examples never set \(declared.subtracting(validator.seen[path] ?? []).sorted())")
        }
    }

    static func examples<T: ContractType>(of type: T.Type) -> [any Encodable] { type.examples }

    @Test func everyOperationHasARouteAndEveryRouteAnOperation() throws {
        let routes = ControlRoutes(
            target: try makeEmulator(), streams: EventStreamSlots(maximum: 1), heartbeat: .seconds(1), streamLifetime: nil)
        #expect(Set(routes.handlers.keys) == Set(ControlContract.processOperations.map(\.id)))
        // The rest are made from those (each device's copy) or answered by the routing (the device list).
        #expect(
            Set(ControlContract.operations.map(\.id))
                == Set(
                    ControlContract.processOperations.map(\.id) + [ControlContract.listDevices.id]
                        + ControlContract.processOperations.filter(\.deviceScoped).map(\.ofDevice.id)))
        #expect(Set(ControlContract.operations.map(\.id)).count == ControlContract.operations.count, "operation ids are unique")
        let names = ControlContract.types.map { $0.schemaName }
        #expect(Set(names).count == names.count, "component names are unique")
    }

    @Test func embeddedDashboardFilesMatchTheirSources() throws {
        for asset in DashboardAssets.Asset.allCases {
            let file = try String(
                contentsOf: Self.root.appendingPathComponent("Sources/Control/Dashboard/\(asset.rawValue)"), encoding: .utf8)
            #expect(asset.text + "\n" == file, "\(asset.rawValue) differs from its embedded copy: run scripts/embed-assets")
        }
    }

    /// What `gattemu ctl` encodes from the request types is what the server's decoders accept.
    @Test func requestTypesDecodeOnTheServer() throws {
        #expect(try ControlBody.value(Self.encode(ValueBody.hex("51 60 0a"))) == [0x51, 0x60, 0x0A])
        #expect(try ControlBody.value(Self.encode(ValueBody.utf8("hi"))) == [0x68, 0x69])
        #expect(try ControlBody.value(Self.encode(ValueBody.base64("UWA="))) == [0x51, 0x60])
        #expect(try ControlBody.variant(Self.encode(VariantBody(variant: nil))) == nil)
        #expect(try ControlBody.variant(Self.encode(VariantBody(variant: "touched"))) == "touched")
        for example in VariableBody.examples { #expect(try ControlBody.variable(Self.encode(example)) == example.value) }
        #expect(
            try ControlBody.arguments(Self.encode(TriggerBody(arguments: ["n": .number(2), "why": .string("x")]))) == [
                "n": "2", "why": "x",
            ])
        for example in FaultsBody.examples { _ = try ControlBody.faults(Self.encode(example)) }
        for example in FaultRequest.examples { _ = try FaultSpecDecoder.spec(Self.encode(example)) }
    }

    /// A profile's fault turned into a request (the dashboard's presets) installs the same fault.
    @Test func faultSpecsRoundTripThroughRequests() throws {
        let specs = [
            #"{"on": "write", "characteristic": "config", "error": "not-authorized", "count": 1}"#,
            #"{"on": "write", "characteristic": "config", "nth": 3, "error": "0x80"}"#,
            #"{"on": "read", "delay": {"min": "50ms", "max": "400ms"}, "probability": 0.5, "seed": 42}"#,
            #"{"on": "notify", "characteristic": "tx", "nth": 2, "drop": true}"#,
            #"{"on": "notify", "corrupt": {"at": 1, "xor": "80"}, "count": 5}"#,
            #"{"on": "notify", "duplicate": 2}"#,
            #"{"silence": "10s", "after": "30s", "id": "quiet"}"#,
            #"{"powerCycle": true}"#,
            #"{"advertise": null, "description": "back to base"}"#,
        ]
        for text in specs {
            let spec = try FaultSpecDecoder.spec(JSONParser.parse(text, file: "spec"))
            let again = try FaultSpecDecoder.spec(Self.encode(FaultRequest(spec)))
            #expect(again == spec, "\(text)")
            var validator = SchemaValidator()
            #expect(validator.problems(try Self.encode(FaultRequest(spec)), FaultRequest.schema) == [], "\(text)")
        }
    }

    /// The event log's hand-written JSON (event stream, --events files) is the contract's ``Event``.
    @Test func eventLogJSONIsTheEventType() throws {
        let events = [
            EmulatorEvent(
                sequence: 3, time: 12.3456, kind: .write, central: BluetoothAddress("AA:BB:CC:DD:EE:01"), characteristic: "rx",
                value: [0x51, 0x60],
                detail: "request \"q\"\n"),
            EmulatorEvent(sequence: 4, time: 0, kind: .bluetoothdLost),
            EmulatorEvent(sequence: 5, time: 1, kind: .notify, value: []),
            EmulatorEvent(
                sequence: 6, time: 2, kind: .firmware, central: BluetoothAddress("AA:BB:CC:DD:EE:01"), characteristic: "smp",
                detail: "smp: image upload seq 1: upload 0+300 of 3552", mtu: 247, device: "dfu",
                progress: EmulatorEvent.Progress(done: 300, total: 3552)),
        ]
        for event in events {
            let decoded = try JSONDecoder().decode(Event.self, from: Data(event.json.utf8))
            #expect(decoded == Event(event))
            #expect(decoded.progress.map { [$0.done, $0.total] } == event.progress.map { [$0.done, $0.total] })
            var validator = SchemaValidator()
            #expect(validator.problems(try JSONParser.parse(event.json, file: "event"), Event.schema) == [])
        }
    }

    /// The live answers of a never-started emulator match their schemas (schemathesis does the same from
    /// outside: scripts/check-contract).
    @Test func liveAnswersMatchTheirSchemas() async throws {
        for profile in ["noke-lock", "leaf-reader", "bleproof"] {
            let emulator = try makeEmulator(profile)
            let status = Status(await emulator.status())
            var validator = SchemaValidator()
            #expect(validator.problems(try Self.encode(status), Status.schema) == [], "\(profile)")
        }
    }
}
