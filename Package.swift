// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "gattemu",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "gattemu", targets: ["gattemu"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        // libdbus, through pkg-config `dbus-1`.
        .systemLibrary(
            name: "CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        // Safe Swift wrapper over libdbus; knows nothing about BlueZ.
        .target(name: "DBus", dependencies: ["CDBus"]),
        // BlueZ peripheral object model: adapter, GATT application, advertisements, centrals.
        .target(name: "BlueZ", dependencies: ["DBus", .product(name: "Logging", package: "swift-log")]),
        // Profile format, validation, byte templates and the behaviour engine; pure Swift.
        .target(name: "Profile"),
        // Runs a profile on BlueZ: behaviour, faults, event log.
        .target(name: "Emulator", dependencies: [
            "BlueZ", "Profile", .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "gattemu", dependencies: [
            "Emulator", "BlueZ", "Profile",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Starts a private dbus-daemon for integration tests.
        .target(name: "DBusTestSupport", dependencies: ["DBus"], path: "Tests/DBusTestSupport"),
        // Fuzz targets: replays inputs normally; a libFuzzer binary when built by scripts/fuzz.
        .executableTarget(name: "gattemu-fuzz", dependencies: ["DBus", "Profile"]),
        .testTarget(name: "DBusTests", dependencies: ["DBus", "DBusTestSupport"]),
        .testTarget(name: "BlueZTests", dependencies: ["BlueZ", "DBus", "DBusTestSupport"]),
        .testTarget(name: "ProfileTests", dependencies: ["Profile"], resources: [.copy("Fixtures")]),
        .testTarget(name: "EmulatorTests", dependencies: ["Emulator", "Profile", "BlueZ"]),
    ],
    swiftLanguageModes: [.v6]
)
