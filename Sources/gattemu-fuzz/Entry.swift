import DBus
import Foundation

#if FUZZING
    /// libFuzzer entry point; the target comes from `GATTEMU_FUZZ_TARGET` (profile, template, dbus, dbus-request, engine,
    /// control, capture, capture-decode, advertising-data, escape).
    let selectedTarget = FuzzTarget(rawValue: ProcessInfo.processInfo.environment["GATTEMU_FUZZ_TARGET"] ?? "") ?? .profile

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        guard let data else { return 0 }
        selectedTarget.run(Array(UnsafeBufferPointer(start: data, count: size)))
        return 0
    }

    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
    ) -> Int32

    /// SwiftPM links an executable's `main` to this symbol; hand the process to libFuzzer's driver.
    @_cdecl("gattemu_fuzz_main")
    public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        // Load once before fuzzing, so one-time allocations are not charged to the first input.
        if [.engine, .control].contains(selectedTarget) && ShippedProfiles.all.isEmpty {
            FileHandle.standardError.write(Data("gattemu-fuzz: no shipped profiles found (set GATTEMU_ROOT)\n".utf8))
            return 2
        }
        var count = argc
        var arguments = argv
        return runFuzzerDriver(&count, &arguments) { data, size in fuzzOneInput(data, size) }
    }
#else
    /// Replays fuzz inputs without libFuzzer: `gattemu-fuzz TARGET FILE|DIR...` (a crash here is a regression).
    @main
    enum Replay {
        static func main() {
            let arguments = CommandLine.arguments.dropFirst()
            if arguments.first == "dbus-seeds", let directory = arguments.dropFirst().first {
                if !writeDBusSeeds(to: directory) { exit(1) }
                return
            }
            guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
                FileHandle.standardError.write(
                    Data("usage: gattemu-fuzz {\(FuzzTarget.allCases.map(\.rawValue).joined(separator: "|"))} FILE|DIR...\n".utf8))
                exit(2)
            }
            var count = 0
            for path in arguments.dropFirst() {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                    FileHandle.standardError.write(Data("gattemu-fuzz: \(path): no such file\n".utf8))
                    exit(2)
                }
                let files =
                    isDirectory.boolValue
                    ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { !$0.hasPrefix(".") }.sorted().map {
                        "\(path)/\($0)"
                    }
                    : [path]
                for file in files {
                    guard let data = FileManager.default.contents(atPath: file) else { continue }
                    target.run(Array(data))
                    count += 1
                }
            }
            print("gattemu-fuzz: \(target.rawValue): \(count) inputs replayed")
        }

        /// Writes marshalled calls shaped like bluetoothd's (ReadValue, WriteValue, AcquireNotify) as seeds; false
        /// (each failure said on stderr) when one could not be written.
        static func writeDBusSeeds(to directory: String) -> Bool {
            let options: DBusValue = .stringVariantDictionary([
                "device": .objectPath("/org/bluez/hci0/dev_00_AA_01_02_00_02"), "link": .string("LE"), "mtu": .uint16(517),
                "offset": .uint16(4),
            ])
            let seeds: [(String, [DBusValue])] = [
                ("ReadValue", [options]),
                ("WriteValue", [.bytes(Array(0..<20)), options]),
                ("AcquireNotify", [options]),
                ("ReadValueNegativeOffset", [.stringVariantDictionary(["offset": .int64(-5), "mtu": .uint16(0)])]),
                ("WriteValueTooLong", [.bytes(Array(repeating: 7, count: 600)), .stringVariantDictionary(["offset": .uint16(500)])]),
                ("Nested", [.structure([.int32(1), .variant(.strings(["a", "b"])), .dictionary(key: .uint16, value: .variant, [])])]),
            ]
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            var written = true
            for (member, arguments) in seeds {
                guard let bytes = try? DBusMarshalling.marshalledMethodCall(member: member, arguments: arguments) else { continue }
                if !FileManager.default.createFile(atPath: "\(directory)/\(member).bin", contents: Data(bytes)) {
                    FileHandle.standardError.write(Data("gattemu-fuzz: cannot write the seed \(directory)/\(member).bin\n".utf8))
                    written = false
                }
            }
            return written
        }
    }
#endif
