import Foundation
import Testing

@testable import BlueZ
@testable import Relay

/// bluetoothd's `[GATT] Channels`, read as bluetoothd reads it: the main.conf its command line names (bluetoothd's
/// only), the key in its section only, valid values only (bluetoothd's version decides the rest).
@Suite struct ATTChannelSettingTests {
    static func commandLine(_ arguments: [String]) -> [UInt8] {
        arguments.flatMap { Array($0.utf8) + [0] }
    }

    @Test func theConfigFileComesFromBluetoothdsCommandLine() {
        func file(_ arguments: [String]) -> String? { BluetoothdConfiguration.configFile(commandLine: Self.commandLine(arguments)) }
        #expect(file(["/usr/libexec/bluetooth/bluetoothd"]) == "/etc/bluetooth/main.conf")
        #expect(file(["bluetoothd", "-n", "-f", "/tmp/a.conf", "-d"]) == "/tmp/a.conf")
        #expect(file(["bluetoothd", "-f/tmp/b.conf"]) == "/tmp/b.conf")
        #expect(file(["bluetoothd", "--configfile=/tmp/c.conf"]) == "/tmp/c.conf")
        #expect(file(["bluetoothd", "--configfile", "d.conf"]) == "d.conf")
        #expect(file(["bluetoothd", "-f"]) == "/etc/bluetooth/main.conf")
        #expect(file(["/usr/bin/python3", "-f", "/tmp/a.conf"]) == nil, "another process (another PID namespace's number)")
        #expect(BluetoothdConfiguration.configFile(commandLine: []) == nil)
    }

    @Test func channelsIsAValidValueOfTheGATTSectionOnly() {
        #expect(ATTChannelSetting(BluetoothdConfiguration(file: "f", text: Array("".utf8))).channels == nil)
        #expect(
            ATTChannelSetting(BluetoothdConfiguration(file: "f", text: Array("[General]\nChannels = 1\n[GATT]\n#Channels = 1\n".utf8)))
                .channels == nil)
        #expect(
            ATTChannelSetting(BluetoothdConfiguration(file: "f", text: Array("[General]\nName = x\n\n[GATT]\n  Channels =\t1  \r\n".utf8)))
                .channels == 1)
        #expect(
            ATTChannelSetting(BluetoothdConfiguration(file: "f", text: Array("[GATT]\nChannels=2\n[LE]\nChannels=1\n".utf8))).channels == 2)
        #expect(ATTChannelSetting(BluetoothdConfiguration(file: "f", text: Array("[GATT]\nChannels = 0x1\n".utf8))).channels == 1)
        #expect(ATTChannelSetting(BluetoothdConfiguration(file: "f", text: Array("[GATT]\nChannels = many\n".utf8))).channels == nil)
        #expect(ATTChannelSetting(BluetoothdConfiguration(file: "f", text: Array("[GATT]\nChannels = 0\n".utf8))).channels == nil)
        #expect(
            ATTChannelSetting(BluetoothdConfiguration(file: "f", text: Array("[GATT]\nChannels = 99999999999999999999999\n".utf8))).channels
                == nil)
        #expect(ATTChannelSetting(BluetoothdConfiguration(file: "f", text: Array("[GATT]\nChannels = 9\n".utf8))).channels == nil)
    }

    @Test func theNoteSaysWhetherWriteCommandsCanBeReordered() {
        #expect(ATTChannelSetting(channels: 1, file: "f").mayReorder == false)
        #expect(ATTChannelSetting(channels: 1, file: "f").note.contains("in order"))
        #expect(ATTChannelSetting(channels: 3, file: "f").note.contains("up to 3 ATT channels per link"))
        let unset = ATTChannelSetting(channels: nil, file: "/etc/bluetooth/main.conf")
        #expect(unset.mayReorder)
        #expect(unset.note.contains("up to 3 ATT channels per link") && unset.note.contains("5.67 and later open one"))
        #expect(ATTChannelSetting.note(unset) == unset.note)
        #expect(ATTChannelSetting.note(nil).contains("could not read bluetoothd's main.conf"))
    }

    /// A relay that could not read the device's table says Enhanced ATT may be why, where bluetoothd may open it; not
    /// for a device that was not found, nor where bluetoothd opens one ATT channel.
    @Test func aFailedAttachNamesEnhancedATTWhereItMayBeWhy() {
        let lost = RelayError.device(.lost(address: "A", reason: "3 of 7 reads got no answer"))
        let failed = RelayError.device(.connectFailed(address: "A", reason: "services not resolved within 15 s"))
        let three = ATTChannelSetting(channels: 3, file: "/etc/bluetooth/main.conf")
        #expect(
            ATTChannelSetting.hint(after: lost, setting: three, enhancedCredits: true)?.contains("opens up to 3 ATT channels per link")
                == true)
        #expect(ATTChannelSetting.hint(after: failed, setting: three, enhancedCredits: true)?.contains("Channels = 1") == true)
        #expect(
            ATTChannelSetting.hint(after: failed, setting: ATTChannelSetting(channels: nil, file: "f"), enhancedCredits: true)?.contains(
                "f sets no") == true)
        #expect(ATTChannelSetting.hint(after: lost, setting: nil, enhancedCredits: true)?.contains("could not be read") == true)
        #expect(ATTChannelSetting.hint(after: lost, setting: ATTChannelSetting(channels: 1, file: "f"), enhancedCredits: true) == nil)
        let notFound = RelayError.device(
            .deviceNotFound(DeviceQuery(parsing: "AA:BB:CC:DD:EE:FF")!, adapter: "hci0", scanned: .seconds(20), seen: 0))
        #expect(ATTChannelSetting.hint(after: notFound, setting: three, enhancedCredits: true) == nil)
        #expect(ATTChannelSetting.hint(after: .profile("x"), setting: three, enhancedCredits: true) == nil)
        // Plain LE credit-based bearers (Linux 6.1, or `enable_ecred` off) do not cross: no hint; unknown: the hint.
        #expect(ATTChannelSetting.hint(after: lost, setting: three, enhancedCredits: false) == nil)
        #expect(ATTChannelSetting.hint(after: failed, setting: nil, enhancedCredits: false) == nil)
        #expect(ATTChannelSetting.hint(after: failed, setting: three, enhancedCredits: nil)?.contains("Channels = 1") == true)
    }

    /// `enable_ecred` as the kernel writes it (`Y`/`N` and a newline); anything else, or no file, is not known.
    @Test func theKernelsEnhancedCreditsAreReadFromTheModuleParameter() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ecred-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("enable_ecred")
        #expect(KernelBluetoothParameters.enhancedCredits(directory: directory.path) == nil)
        for (text, expected) in [("Y\n", true), ("N\n", false), ("maybe\n", nil), ("", nil)] as [(String, Bool?)] {
            try Data(text.utf8).write(to: file)
            #expect(KernelBluetoothParameters.enhancedCredits(directory: directory.path) == expected, "\(text)")
        }
    }
}
