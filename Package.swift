// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "gattemu",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "gattemu", targets: ["gattemu"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        // No default traits: they add swift-configuration and full Foundation, which gattemu does not use.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0", traits: []),
        .package(url: "https://github.com/apple/swift-nio", from: "2.60.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        // Already required by Hummingbird; the control API merges its event stream with heartbeats.
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.0.0"),
        // Already required by Hummingbird; the control API's connection guard sees its HTTP request parts.
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.20.0"),
        // Already required by Hummingbird; the control API's middleware names a few header fields.
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
    ],
    targets: [
        // libdbus, through pkg-config `dbus-1`.
        .systemLibrary(
            name: "CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        // Bluetooth's own types (addresses, UUIDs, AD structures, ATT opcodes and errors, characteristic
        // properties), shared by every layer; no dependencies.
        .target(name: "Bluetooth"),
        // How values are written wherever they are written (profiles, fault specs, control API bodies): the hex,
        // base64 and UTF-8 value grammar, durations, addresses and passkeys as text, and the size limits; below
        // both Profile and ControlContract.
        .target(name: "Lexical", dependencies: ["Bluetooth"]),
        // The one terminal-text escaper, the one HTML escaper and the one JSON string quoter, deciding by Unicode scalar or UTF-8 byte;
        // no dependencies, so every layer (BlueZ included) uses the same.
        .target(name: "TextEscaping"),
        // The one writer of private outputs (recordings, profiles made from a device, the report, the control token):
        // mode 0600, a new file renamed into place, never through a link; no dependencies.
        .target(name: "PrivateFiles"),
        // The one JSON tree (JSONNode: every node located in its file, or generated): the strict parser that reads
        // profiles, request bodies and the command line's files, and the two printers of replica profiles and the OpenAPI document.
        .target(name: "JSON", dependencies: ["Bluetooth", "TextEscaping"]),
        // A device as recorded from outside (capture or live clone) and the profile that replays it.
        .target(name: "Replica", dependencies: ["Bluetooth", "JSON"]),
        // Reads HCI captures (btsnoop, pcap, pcapng) and decodes them into a trace: advertising,
        // connections, ATT, SMP. Depends on Bluetooth only; no Foundation.
        // SMP (mcumgr) and MCUboot images: what a firmware-update target speaks; pure, no I/O.
        .target(name: "Digest"),
        .target(name: "McuMgr", dependencies: ["Digest"]),
        .target(name: "Capture", dependencies: ["Bluetooth"]),
        // `gattemu import`: one peripheral of a decoded capture as a DeviceReplica (table, values, conversation, security).
        .target(name: "CaptureImport", dependencies: ["Bluetooth", "Capture", "Replica", "TextEscaping"]),
        // A recorded device (DeviceReplica) written as the btsnoop HCI log its central would have kept (`gattemu relay --capture`).
        .target(name: "CaptureExport", dependencies: ["Bluetooth", "Replica"]),
        // Safe Swift wrapper over libdbus; knows nothing about BlueZ.
        .target(name: "DBus", dependencies: ["CDBus"]),
        // BlueZ over D-Bus: the peripheral object model (adapter, GATT application, advertisements, centrals)
        // and the central side `gattemu clone` uses (discovery, remote devices, the remote GATT table).
        .target(name: "BlueZ", dependencies: ["DBus", "Bluetooth", "Lexical", "TextEscaping"]),
        // What `gattemu clone` recorded as a central, as a ``DeviceReplica``.
        .target(name: "DeviceClone", dependencies: ["BlueZ", "Bluetooth", "Replica"]),
        // Every fault kind, declared once (name, value grammar and bounds, operations, summary, example); below
        // Profile and ControlContract, which both read it. Bluetooth's limits only.
        .target(name: "FaultCatalog", dependencies: ["Bluetooth"]),
        // The control API's contract: its operations and the Codable types they take and answer, each with its
        // JSON Schema; the OpenAPI document is built from them (docs/control.md, "Contract"). Its patterns are Lexical's,
        // its fault kinds the catalog's.
        .target(name: "ControlContract", dependencies: ["Bluetooth", "FaultCatalog", "JSON", "Lexical"]),
        // Profile format, validation, byte templates and the behaviour engine; pure Swift.
        .target(name: "Profile", dependencies: ["Bluetooth", "FaultCatalog", "JSON", "Lexical", "TextEscaping", "McuMgr"]),
        // Runs a profile on BlueZ: behaviour, faults, event log.
        .target(
            name: "Emulator",
            dependencies: [
                "BlueZ", "Profile", "Bluetooth", "TextEscaping", "McuMgr", "Digest",
                .product(name: "DequeModule", package: "swift-collections"),
            ]),
        // `gattemu relay`: the link to the real device as a central, forwarding the mirror's operations, and the
        // session's recording.
        .target(
            name: "Relay",
            dependencies: ["BlueZ", "Bluetooth", "DBus", "DeviceClone", "Emulator", "Lexical", "Profile", "Replica", "TextEscaping"]),
        // Decoding of the control API's request bodies; no HTTP, so the fuzzer reaches it directly.
        .target(name: "ControlBodies", dependencies: ["Bluetooth", "Lexical", "Profile", "ControlContract"]),
        // Runtime control API over HTTP/JSON (Hummingbird 2), served by `gattemu run`.
        .target(
            name: "Control",
            dependencies: [
                "Emulator", "Profile", "ControlBodies", "ControlContract", "Lexical", "Bluetooth", "PrivateFiles",
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            exclude: [
                "openapi.json", "Dashboard/dashboard.html", "Dashboard/dashboard.css", "Dashboard/dashboard.js", "Dashboard/timeline.js",
                "Dashboard/report.js",
            ]),
        .executableTarget(
            name: "gattemu",
            dependencies: [
                "Emulator", "BlueZ", "DBus", "Profile", "Control", "ControlContract", "Bluetooth", "Capture", "CaptureImport", "Replica",
                "DeviceClone", "TextEscaping", "FaultCatalog", "Relay", "CaptureExport", "Lexical", "PrivateFiles", "Digest",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Starts a private dbus-daemon for integration tests.
        .target(name: "DBusTestSupport", dependencies: ["DBus"], path: "Tests/DBusTestSupport"),
        // A stand-in bluetoothd on a private bus for tests and the host benchmark: adapters, GATT and
        // advertising managers (the peripheral side) and remote devices with GATT tables (the central side).
        .target(name: "BlueZTestSupport", dependencies: ["DBus", "DBusTestSupport"], path: "Tests/BlueZTestSupport"),
        // Fuzz targets: replays inputs normally; a libFuzzer binary when built by scripts/fuzz.
        .executableTarget(
            name: "gattemu-fuzz",
            dependencies: [
                "BlueZ", "DBus", "Profile", "ControlBodies", "Bluetooth", "Capture", "CaptureImport", "Replica", "TextEscaping", "McuMgr",
            ]),
        // Host profiling driver (benchmarks/README.md): a stand-in bluetoothd on a private bus drives `gattemu run`.
        .executableTarget(
            name: "gattemu-hostbench", dependencies: ["DBus", "DBusTestSupport", "BlueZTestSupport"], path: "benchmarks/host"),
        // Capture debugging and benchmark driver (benchmarks/README.md, scripts/check-capture-decoder): counts, dump, decode, generate.
        .executableTarget(
            name: "gattemu-capturetool", dependencies: ["Capture", "CaptureTestSupport", "Bluetooth"], path: "benchmarks/capture/tool"),
        .testTarget(name: "BluetoothTests", dependencies: ["Bluetooth"]),
        .testTarget(name: "LexicalTests", dependencies: ["Lexical", "Bluetooth"]),
        // Reads Package.swift and the sources: the modules' arrows point one way (no dependencies).
        .testTarget(name: "LayeringTests"),
        .testTarget(name: "TextEscapingTests", dependencies: ["TextEscaping"]),
        .testTarget(name: "PrivateFilesTests", dependencies: ["PrivateFiles"]),
        .testTarget(name: "ReplicaTests", dependencies: ["Replica", "Bluetooth", "JSON", "Profile"]),
        // Builds synthetic captures (btsnoop, pcap, pcapng; HCI events, ACL fragments, ATT) for tests, fuzz seeds, the benchmark.
        .target(name: "CaptureTestSupport", dependencies: ["Capture", "CaptureExport", "Bluetooth"], path: "Tests/CaptureTestSupport"),
        .testTarget(name: "CaptureTests", dependencies: ["Capture", "CaptureTestSupport", "Bluetooth"]),
        .testTarget(
            name: "CaptureImportTests", dependencies: ["CaptureImport", "Capture", "CaptureTestSupport", "Replica", "Profile", "Bluetooth"]),
        // The btsnoop writer judged by CaptureImport (the same profile back) and by tshark.
        .testTarget(
            name: "CaptureExportTests",
            dependencies: ["CaptureExport", "CaptureImport", "Capture", "CaptureTestSupport", "JSON", "Replica", "Profile", "Bluetooth"]),
        .testTarget(name: "DBusTests", dependencies: ["DBus", "DBusTestSupport"]),
        .testTarget(name: "BlueZTests", dependencies: ["BlueZ", "DBus", "DBusTestSupport", "BlueZTestSupport", "Bluetooth"]),
        .testTarget(
            name: "CloneTests",
            dependencies: [
                "DeviceClone", "Relay", "BlueZ", "Bluetooth", "Replica", "Profile", "DBus", "DBusTestSupport", "BlueZTestSupport",
                "Emulator",
            ]),
        .testTarget(name: "McuMgrTests", dependencies: ["McuMgr", "Digest"], resources: [.copy("Fixtures")]),
        .testTarget(name: "DigestTests", dependencies: ["Digest"]),
        .testTarget(
            name: "ProfileTests", dependencies: ["Profile", "Bluetooth", "FaultCatalog", "Lexical", "TextEscaping"],
            resources: [.copy("Fixtures")]),
        .testTarget(
            name: "EmulatorTests",
            dependencies: [
                "Emulator", "Profile", "BlueZ", "Bluetooth", "DBus", "DBusTestSupport", "BlueZTestSupport", "McuMgr", "Digest",
            ]),
        // A control server without Bluetooth (a never-started Emulator) for scripts/check-contract and the
        // browser tests (Tests/web); not a product, so `swift build --product gattemu` never builds it.
        .executableTarget(
            name: "gattemu-control-fixture", dependencies: ["BlueZ", "Bluetooth", "Control", "Emulator", "McuMgr", "Profile"],
            path: "Tests/ControlFixture"),
        .testTarget(
            name: "ControlTests",
            dependencies: [
                "Control", "ControlContract", "ControlBodies", "Emulator", "Profile", "BlueZ", "Bluetooth", "DBus", "FaultCatalog",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
