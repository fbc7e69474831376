import ArgumentParser
import Control
import ControlContract
import Digest
import Emulator
import FoundationEssentials
import PrivateFiles
import TextEscaping

#if canImport(Glibc)
    import Glibc
#endif

/// `gattemu report EVENTS.jsonl [-o report.html]`: one self-contained HTML file of a recorded run.
struct Report: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract:
            "Turn an events file (gattemu run --events FILE) into one self-contained HTML file: sequence diagram, per-central lanes, faults highlighted, summary counts.",
        discussion: """
            The file is read as a stream, one JSON event per line; at most --max-events events are kept (the latest; \
            the report says how many were cut), and at most 64 MiB of them (values and details past 4,096 bytes are \
            cut in the report, and said to be); a line may be at most 1 MiB and the file at most 256 MiB. The HTML \
            works offline and runs only its own scripts (Content-Security-Policy with their hashes); every text from \
            the events is data, never markup. The report is written with mode 0600 (it holds what the events file \
            holds) and never through a symbolic link. \
            Exit codes: 0 ok, 1 the report could not be written, 2 an unreadable, malformed or too large events file \
            (file:line and a hint).
            """)

    @Argument(help: "The events file: JSON lines as written by gattemu run --events FILE.")
    var events: String

    @Option(name: .shortAndLong, help: ArgumentHelp("Where to write the report.", valueName: "file"))
    var output = "report.html"

    @Option(help: "Keep at most this many events (the latest).")
    var maxEvents = 100_000

    static let maximumLine = 1 << 20
    /// The most bytes read from an events file: about two million events of a typical run (~130 bytes a line).
    static let maximumBytes = 256 << 20
    /// The most bytes of events a report holds (the page, and the memory making it, follow): the latest that fit.
    static let maximumKeptBytes = 64 << 20
    /// A value (hex) or detail longer than this is cut in the report (the events file keeps it whole).
    static let maximumField = 4096

    func validate() throws {
        guard (1...1_000_000).contains(maxEvents) else { throw ValidationError("--max-events: from 1 to 1000000") }
    }

    func run() throws {
        let (kept, total, cut, shortened) = try Self.read(events, maximum: maxEvents)
        var notes: [String] = []
        if cut > 0 {
            notes.append(
                "The first \(cut) of \(total) events were cut (at most --max-events \(maxEvents), and \(Self.maximumKeptBytes >> 20) MiB of them); "
                    + "the latest \(kept.count) are shown.")
        }
        if shortened > 0 {
            notes.append(
                "\(shortened) events have a value or detail longer than \(Self.maximumField) characters, cut here; the events file has them whole."
            )
        }
        let html = Self.html(events: kept, notes: notes, title: events)
        do {
            try Self.write(html, to: output)
        } catch {
            throw Failure.runtime("\(output): cannot write the report: \(error)")
        }
        // (DescriptorOutput escapes what it writes: the path is the user's.)
        DescriptorOutput.writeError(
            "gattemu: report of \(kept.count) event\(kept.count == 1 ? "" : "s") written to \(output)\(cut > 0 ? " (\(cut) cut)" : "")\n")
    }

    /// Streams `path`, decoding each line as an ``Event``; keeps the latest `maximum`. Bad input throws
    /// `Failure.badInput` with file:line.
    static func read(_ path: String, maximum: Int) throws -> (events: [Event], total: Int, cut: Int, shortened: Int) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure.badInput("\(path): cannot read it: \(String(cString: strerror(errno)).lowercased())") }
        defer { close(descriptor) }
        var info = stat()
        if fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            throw Failure.badInput("\(path): is a directory, not an events file")
        }
        let tooLarge = Failure.badInput(
            "\(path): larger than \(maximumBytes >> 20) MiB (hint: report the latest events: tail -n 100000 \(path) > latest.jsonl)")
        if (info.st_mode & S_IFMT) == S_IFREG, info.st_size > maximumBytes { throw tooLarge }
        var bytesRead = 0
        let decoder = JSONDecoder()
        // The latest events, oldest first from `head`, at most `maximum` and `maximumKeptBytes` of them.
        var kept: [Event] = []
        var head = 0
        var keptBytes = 0
        var shortened = 0
        func size(_ event: Event) -> Int {
            64 + (event.value?.utf8.count ?? 0) + (event.detail?.utf8.count ?? 0) + (event.central?.utf8.count ?? 0)
                + (event.characteristic?.utf8.count ?? 0) + (event.device?.utf8.count ?? 0)
        }
        var total = 0
        var lineNumber = 0
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        let hint = "(hint: give the file gattemu run --events FILE wrote: one JSON event per line, as in docs/control.md \"Events\")"
        func handle(_ line: ArraySlice<UInt8>) throws {
            lineNumber += 1
            var line = line
            if line.last == 0x0D { line = line.dropLast() }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }
            var event: Event
            do {
                event = try decoder.decode(Event.self, from: Data(line))
            } catch {
                throw Failure.badInput("\(path):\(lineNumber): not an event: \(Self.reason(error)) \(hint)")
            }
            total += 1
            // Each long field is cut (a value is hex: ASCII; a detail is text, cut at a character); the event counts once.
            var cut = false
            if let value = event.value, value.utf8.count > maximumField {
                event.value = String(value.utf8.prefix(maximumField)) ?? ""
                cut = true
            }
            if let detail = event.detail, detail.utf8.count > maximumField {
                event.detail = String(detail.prefix(maximumField / 4)) + "…"
                cut = true
            }
            if let device = event.device, device.utf8.count > maximumField {
                event.device = String(device.prefix(maximumField / 4)) + "…"
                cut = true
            }
            if cut { shortened += 1 }
            kept.append(event)
            keptBytes += size(event)
            while kept.count - head > maximum || keptBytes > maximumKeptBytes {
                keptBytes -= size(kept[head])
                head += 1
            }
            if head > 65_536, head * 2 > kept.count {
                kept.removeFirst(head)
                head = 0
            }
        }
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure.badInput("\(path): cannot read it: \(String(cString: strerror(errno)).lowercased())")
            }
            if count == 0 { break }
            bytesRead += count
            if bytesRead > maximumBytes { throw tooLarge }
            pending += chunk[..<count]
            var lineStart = 0
            while let newline = pending[lineStart...].firstIndex(of: 0x0A) {
                try handle(pending[lineStart..<newline])
                lineStart = newline + 1
            }
            pending.removeSubrange(..<lineStart)
            if pending.count > maximumLine {
                throw Failure.badInput("\(path):\(lineNumber + 1): line longer than \(maximumLine) bytes \(hint)")
            }
        }
        if !pending.isEmpty { try handle(pending[...]) }
        guard total > 0 else { throw Failure.badInput("\(path): no events \(hint)") }
        let latest = Array(kept[head...])
        return (latest, total, total - latest.count, shortened)
    }

    static func reason(_ error: any Error) -> String {
        switch error {
        // The decoder's words may quote the input (an unknown event kind): escaped for the terminal.
        case DecodingError.dataCorrupted(let context):
            return TerminalText.escaped(context.underlyingError.map { "malformed JSON (\($0))" } ?? context.debugDescription)
        case DecodingError.keyNotFound(let key, _): return "missing \"\(key.stringValue)\""
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "\"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" has the wrong type"
        default: return TerminalText.escaped("\(error)")
        }
    }

    /// The report: the dashboard's CSS, timeline.js and report.js inline, the events as JSON data.
    static func html(events: [Event], notes: [String], title: String) -> String {
        struct Embedded: Encodable {
            var events: [Event]
            var notes: [String]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json =
            (try? encoder.encode(Embedded(events: events, notes: notes))).map { String(decoding: $0, as: UTF8.self) }
            ?? #"{"events":[],"notes":[]}"#
        let data = HTMLText.scriptData(json: json)
        let style = DashboardAssets.Asset.style.text
        let scripts = [DashboardAssets.Asset.timeline.text, DashboardAssets.Asset.report.text]
        let policy =
            "default-src 'none'; script-src " + scripts.map(SHA256.cspSource).joined(separator: " ")
            + "; style-src " + SHA256.cspSource(style) + "; img-src data:; base-uri 'none'; form-action 'none'"
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta http-equiv="Content-Security-Policy" content="\(policy)">
            <link rel="icon" href="data:,">
            <title>gattemu report — \(HTMLText.escaped(title))</title>
            <style>\(style)</style>
            </head>
            <body>
            <header class="bar"><h1>gattemu report <small>\(HTMLText.escaped(title))</small></h1></header>
            <main class="grid">
            <section class="card wide"><h2>Summary</h2><div id="summary"></div></section>
            <section class="card wide">
            <h2>Timeline <small id="timeline-count"></small></h2>
            <div class="row filters">
            <input id="filter-text" type="search" placeholder="filter text" aria-label="filter text">
            <select id="filter-central" aria-label="central"><option value="">all centrals</option></select>
            <select id="filter-kinds" aria-label="kinds"><option value="">all events</option><option value="gatt">reads, writes, answers, notifications</option><option value="faults">faults and errors</option><option value="links">connections and advertising</option><option value="firmware">firmware update</option><option value="channels">L2CAP channels</option></select>
            </div>
            <div id="timeline"></div>
            <pre id="event-detail" class="detail"></pre>
            </section>
            </main>
            <script type="application/json" id="events">\(data)</script>
            <script>\(scripts[0])</script>
            <script>\(scripts[1])</script>
            </body>
            </html>

            """
    }

    /// Writes `text` to `path` privately (``PrivateFile``: mode 0600, renamed into place, never through a link): the
    /// report holds what the events file (0600) holds. A character device or FIFO at `path` (`/dev/null`,
    /// `/dev/stdout`) is written to as it is.
    static func write(_ text: String, to path: String) throws {
        var info = stat()
        let kind = lstat(path, &info) == 0 ? info.st_mode & S_IFMT : 0
        guard kind == S_IFCHR || kind == S_IFIFO else {
            do {
                return try PrivateFile.write(Array(text.utf8), to: path)
            } catch .refused(_, let why), .failed(_, let why) {
                throw ReportWriteError(why)
            }
        }
        let descriptor = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw ReportWriteError(String(cString: strerror(errno)).lowercased()) }
        defer { close(descriptor) }
        var bytes = Array(text.utf8)
        guard DescriptorOutput.writeAll(&bytes, to: descriptor) == 0 else {
            throw ReportWriteError(String(cString: strerror(errno)).lowercased())
        }
    }
}

struct ReportWriteError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
