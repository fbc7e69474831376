import Bluetooth
import Capture
import CaptureTestSupport
import Foundation

/// Capture debugging and benchmarking (not part of gattemu's command line):
///
///     gattemu-capturetool counts FILE...        per file, one JSON line: ATT opcodes, advertising reports, connections
///     gattemu-capturetool summary FILE...       the per-device summary `gattemu import --list` will build on
///     gattemu-capturetool dump FILE             every decoded event, one line each
///     gattemu-capturetool decode FILE [--trace] decode time and counts (the benchmark; --trace keeps every PDU)
///     gattemu-capturetool generate FILE MB [sessions|names|fragments]
///                                               a synthetic btsnoop of about MB megabytes (0.5 works): the benchmark's sessions
///                                               (default), or an adversarial capture: distinct GAP names read
///                                               over and over, or ACL start fragments claiming PDUs never sent
///     gattemu-capturetool seeds DIR             small synthetic captures in every format (fuzz seeds)
///     gattemu-capturetool hid FILE              a phone's session with a HID keyboard (three Reports 2A4D, two Battery
///                                               services), for scripts/check-import
@main
enum CaptureTool {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let command = arguments.first else { usage() }
        let rest = Array(arguments.dropFirst())
        switch command {
        case "counts": rest.forEach(counts)
        case "summary": rest.forEach(summary)
        case "dump": rest.forEach(dump)
        case "decode":
            guard let path = rest.first else { usage() }
            decode(path, keepTrace: rest.contains("--trace"))
        case "generate":
            guard rest.count == 2 || rest.count == 3, let megabytes = Double(rest[1]), megabytes > 0, megabytes < 100_000 else { usage() }
            let bytes = Int(megabytes * 1_000_000)
            switch rest.count == 3 ? rest[2] : "sessions" {
            case "sessions": BenchmarkCapture.write(path: rest[0], size: bytes)
            case "names": AdversarialCapture.names(path: rest[0], size: bytes)
            case "fragments": AdversarialCapture.fragments(path: rest[0], size: bytes)
            default: usage()
            }
        case "seeds":
            guard let directory = rest.first else { usage() }
            FuzzSeeds.write(to: directory)
        case "hid":
            guard rest.count == 1 else { usage() }
            guard FileManager.default.createFile(atPath: rest[0], contents: Data(HIDSession.script().btsnoop())) else {
                FileHandle.standardError.write(Data("gattemu-capturetool: cannot write \(rest[0])\n".utf8))
                exit(1)
            }
        default: usage()
        }
    }

    static func usage() -> Never {
        FileHandle.standardError.write(Data("usage: gattemu-capturetool counts|summary|dump|decode|generate|seeds|hid ...\n".utf8))
        exit(2)
    }

    static func fail(_ path: String, _ problem: CaptureProblem) {
        print("{\"file\": \"\(path)\", \"error\": \"\(problem.description.replacingOccurrences(of: "\"", with: "'"))\"}")
    }

    /// Counts as tshark can report them: ATT PDUs per opcode, advertising reports (fragments one each),
    /// LE connection-complete events with status 0.
    static func counts(_ path: String) {
        let reader: CaptureReader
        do { reader = try CaptureReader(path: path) } catch { return fail(path, error) }
        var att: [UInt8: Int] = [:]
        var advertising = 0
        var connections = 0
        var madeUp = 0
        var problems = 0
        var transactions = 0
        var smp = 0
        var decoder = CaptureDecoder()
        let handle: (CaptureEvent) -> Void = { event in
            switch event {
            case .att(let pdu): att[pdu.opcode.rawValue, default: 0] += 1
            case .advertisingReport(let report): advertising += report.fragments
            case .connection(let connection) where connection.closed == nil && connection.link == .le:
                switch connection.origin {
                case .leConnectionComplete, .leEnhancedConnectionComplete: connections += 1
                case .aclData: madeUp += 1
                default: break
                }
            case .attTransaction: transactions += 1
            case .smp: smp += 1
            case .problem: problems += 1
            default: break
            }
        }
        var seen = Set<Int>()
        while let record = reader.next() {
            decoder.decode(record) { event in
                // A connection event repeats for every change; count each connection once.
                if case .connection(let connection) = event, !seen.insert(connection.id).inserted { return }
                handle(event)
            }
        }
        decoder.finish(handle)
        let opcodes = att.keys.sorted().map { "\"0x\(String(format: "%02x", $0))\": \(att[$0]!)" }.joined(separator: ", ")
        print(
            "{\"file\": \"\(path)\", \"format\": \"\(reader.format)\", \"frames\": \(reader.frames), \"att\": {\(opcodes)}, "
                + "\"adv\": \(advertising), \"conn\": \(connections), \"conn_from_acl\": \(madeUp), \"transactions\": \(transactions), "
                + "\"smp\": \(smp), \"problems\": \(problems + reader.problemCount)}")
    }

    static func summary(_ path: String) {
        let summary: CaptureSummary
        do { summary = try CaptureSummary.read(path: path) } catch { return print("\(path): \(error)") }
        print(
            "\(path): \(summary.format), \(summary.frames) frames, \(summary.statistics.records) HCI records"
                + (summary.duration.map { String(format: ", %.1f s", Double($0) / 1e6) } ?? ""))
        for controller in summary.controllers {
            print(
                "  controller \(controller.index): \(controller.publicAddress?.description ?? "?") \(controller.localName ?? controller.kernelName ?? "")"
            )
        }
        for device in summary.devices where device.connections.count > 0 || device.attPDUs > 0 || !device.names.isEmpty {
            let roles = device.roles.map(\.description).sorted().joined(separator: "/")
            let operations = device.attOperations.sorted { $0.key.rawValue < $1.key.rawValue }
                .map { "\($0.key.description) \($0.value)" }.joined(separator: ", ")
            print(
                "  \(device.identity) \(device.names.map { "\"\($0)\"" }.joined(separator: " ")): \(device.advertisingReports) adv "
                    + "(\(device.scanResponses) scan rsp), \(device.connections.count) connections \(roles), \(device.attPDUs) ATT PDUs")
            if !operations.isEmpty { print("    \(operations)") }
        }
        let quiet = summary.devices.filter { $0.connections.isEmpty && $0.attPDUs == 0 && $0.names.isEmpty }.count
        if quiet > 0 { print("  (\(quiet) more advertisers without names or connections)") }
        print("  \(summary.failedConnections) failed connection attempts")
        for note in summary.notes { print("  note: \(note)") }
        for problem in summary.problems.prefix(20) { print("  problem: \(problem)") }
        if summary.problemCount > 20 { print("  … \(summary.problemCount - 20) more problems") }
    }

    static func dump(_ path: String) {
        let reader: CaptureReader
        do { reader = try CaptureReader(path: path) } catch { return print("\(path): \(error)") }
        var decoder = CaptureDecoder()
        let show: (CaptureEvent) -> Void = { event in
            switch event {
            case .att(let pdu):
                print("#\(pdu.frame) conn \(pdu.connection) \(pdu.direction) \(pdu.opcode): \(pdu.message)")
            case .attTransaction(let transaction):
                print(
                    "#\(transaction.response?.frame ?? transaction.request.frame) transaction \(transaction.request.opcode) #\(transaction.request.frame) → \(transaction.outcome)"
                )
            case .advertisingReport(let report):
                print(
                    "#\(report.frame) adv \(report.address) \(report.properties.rawValue) rssi \(report.rssi.map(String.init) ?? "-") \(report.advertisingData.localName ?? "")"
                )
            default:
                print("\(event)")
            }
        }
        while let record = reader.next() { decoder.decode(record, show) }
        decoder.finish(show)
        for problem in reader.problems { print("reader problem: \(problem)") }
    }

    static func decode(_ path: String, keepTrace: Bool) {
        let start = DispatchTime.now().uptimeNanoseconds
        do {
            if keepTrace {
                let trace = try CaptureTrace.read(path: path)
                let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                print(
                    String(
                        format: "trace: %.2f s, %d frames, %d ATT PDUs, %d transactions, %d connections, %d problems",
                        seconds, trace.frames, trace.attPDUs.count, trace.attTransactions.count, trace.connections.count, trace.problemCount
                    ))
            } else {
                let summary = try CaptureSummary.read(path: path)
                let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                print(
                    String(
                        format: "summary: %.2f s, %d frames, %d ATT PDUs, %d devices, %d problems",
                        seconds, summary.frames, summary.statistics.attPDUs, summary.devices.count, summary.problemCount))
            }
        } catch {
            print("\(path): \(error)")
            exit(1)
        }
    }
}
