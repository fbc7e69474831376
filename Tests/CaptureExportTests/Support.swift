import Capture
import CaptureImport
import Foundation
import JSON
import Replica
import Testing

/// Running what judges an exported capture: `gattemu import` and tshark, on a temporary file.
enum Judge {
    /// The profile JSON without the `description` members (where each element came from, which differs by
    /// design between a relay's recording and an import of its capture).
    static func withoutDescriptions(_ json: JSONNode) -> JSONNode {
        switch json.value {
        case .array(let items): .array(items.map(withoutDescriptions))
        case .object(let members): .object(members.filter { $0.key != "description" }.map { ($0.key, withoutDescriptions($0.value)) })
        default: json
        }
    }

    /// The replica `gattemu import` makes of `bytes` (the only device it talks to).
    static func imported(_ bytes: [UInt8], source: String = "export.btsnoop") throws -> (DeviceReplica, CaptureTrace) {
        let trace = CaptureTrace(reader: try CaptureReader(bytes: bytes))
        let choice = try CaptureImport.select(nil, in: trace)
        return (CaptureImport.replica(of: choice, in: trace, source: source), trace)
    }

    /// A temporary file holding `bytes`; removed by the caller.
    static func file(_ bytes: [UInt8], suffix: String = ".btsnoop") throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("capture-export-\(UUID().uuidString)\(suffix)").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `arguments` (through /usr/bin/env), reading its output to the end.
    static func run(_ arguments: [String]) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Errors are read on another thread so that neither pipe fills while the other is drained.
        nonisolated(unsafe) var errorData = Data()
        let reader = Thread { errorData = errors.fileHandleForReading.readDataToEndOfFile() }
        reader.start()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !reader.isFinished { Thread.sleep(forTimeInterval: 0.01) }
        return Outcome(
            status: process.terminationStatus, stdout: String(decoding: data, as: UTF8.self),
            stderr: String(decoding: errorData, as: UTF8.self))
    }

    /// `gattemu` as `swift build --build-tests` leaves it: next to the test bundle.
    static var gattemu: String {
        get throws {
            let path = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("gattemu").path
            try #require(FileManager.default.isExecutableFile(atPath: path), "no \(path): build with swift build --build-tests")
            return path
        }
    }
}
