import BlueZ
import BlueZTestSupport
import DBusTestSupport
import Foundation
import Testing

/// `gattemu adapters` prints what bluetoothd says of each adapter; any local user may set an adapter's alias (and
/// `gattemu relay` copies a real device's name into one): it reaches the terminal escaped, on one line.
@Suite struct AdaptersCommandTests {
    @Test(.timeLimit(.minutes(2))) func anAliasWithTerminalControlsIsPrintedEscaped() async throws {
        let rig = try await Rig([])
        let stack = try await BlueZStack.connect(bus: .address(rig.bus.address))
        try await stack.adapter("hci0").setAlias("\u{1B}]0;owned\u{07}\u{1B}[2J\nhci9  FA:KE  powered")
        await stack.close()
        let run = try await GattemuCommand.run(["adapters"], bus: rig.bus.address)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stdout.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 }, "\(run.stdout.debugDescription)")
        #expect(run.stdout.split(separator: "\n").count == 1, "\(run.stdout.debugDescription)")
        #expect(run.stdout.contains(#"alias "\u{1B}]0;owned\u{7}\u{1B}[2J\nhci9  FA:KE  powered""#), "\(run.stdout)")
    }
}
