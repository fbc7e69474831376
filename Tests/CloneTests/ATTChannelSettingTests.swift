import Testing

@testable import Relay

/// bluetoothd's `[GATT] Channels`, read as bluetoothd reads it: the main.conf its command line names, the key in its
/// section only, the default when unset, bluetoothd's range.
@Suite struct ATTChannelSettingTests {
    static func commandLine(_ arguments: [String]) -> [UInt8] {
        arguments.flatMap { Array($0.utf8) + [0] }
    }

    @Test func theConfigFileComesFromTheCommandLine() {
        #expect(ATTChannelSetting.configFile(commandLine: Self.commandLine(["/usr/libexec/bluetooth/bluetoothd"])) == "/etc/bluetooth/main.conf")
        #expect(ATTChannelSetting.configFile(commandLine: Self.commandLine(["bluetoothd", "-n", "-f", "/tmp/a.conf", "-d"])) == "/tmp/a.conf")
        #expect(ATTChannelSetting.configFile(commandLine: Self.commandLine(["bluetoothd", "-f/tmp/b.conf"])) == "/tmp/b.conf")
        #expect(ATTChannelSetting.configFile(commandLine: Self.commandLine(["bluetoothd", "--configfile=/tmp/c.conf"])) == "/tmp/c.conf")
        #expect(ATTChannelSetting.configFile(commandLine: Self.commandLine(["bluetoothd", "--configfile", "/tmp/d.conf"])) == "/tmp/d.conf")
        #expect(ATTChannelSetting.configFile(commandLine: Self.commandLine(["bluetoothd", "-f"])) == "/etc/bluetooth/main.conf")
        #expect(ATTChannelSetting.configFile(commandLine: []) == "/etc/bluetooth/main.conf")
    }

    @Test func channelsIsReadFromTheGATTSectionOnly() {
        #expect(ATTChannelSetting.channels(mainConf: "") == 3)
        #expect(ATTChannelSetting.channels(mainConf: "[General]\nChannels = 1\n[GATT]\n#Channels = 1\n") == 3)
        #expect(ATTChannelSetting.channels(mainConf: "[General]\nName = x\n\n[GATT]\n  Channels =\t1  \r\n") == 1)
        #expect(ATTChannelSetting.channels(mainConf: "[GATT]\nChannels=2\n[LE]\nChannels=1\n") == 2)
        #expect(ATTChannelSetting.channels(mainConf: "[GATT]\nChannels = many\n") == 3)
        #expect(ATTChannelSetting.channels(mainConf: "[GATT]\nChannels = 0\n") == 1)
        #expect(ATTChannelSetting.channels(mainConf: "[GATT]\nChannels = 99999999999999999999999\n") == 3)
        #expect(ATTChannelSetting.channels(mainConf: "[GATT]\nChannels = 9\n") == 5)
        #expect(ATTChannelSetting(channels: 1, file: "f").mayReorder == false)
        #expect(ATTChannelSetting(channels: 3, file: "f").note.contains("out of order"))
    }
}
