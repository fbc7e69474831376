import Testing

@testable import BlueZ
@testable import Emulator

/// A firmware target's start says whether bluetoothd's ATT MTU lets SMP clients' MTU − 3 byte pieces through.
@Suite struct FirmwareMTUAdviceTests {
    static func note(_ mainConf: String) -> String {
        FirmwareMTUAdvice.note(BluetoothdConfiguration(file: "/etc/bluetooth/main.conf", text: Array(mainConf.utf8)))
    }

    @Test func bluezsDefaultAndAnythingAbove515AskForExchangeMTU515() {
        for conf in [
            "", "[GATT]\n#ExchangeMTU = 247\n", "[General]\nExchangeMTU = 247\n", "[GATT]\nExchangeMTU = 516\n",
            "[GATT]\nExchangeMTU = 9999\n",
        ] {
            let note = Self.note(conf)
            #expect(note.contains("set ExchangeMTU = 515 in [GATT] there"), "\(conf): \(note)")
            #expect(note.contains("upload stalls"))
        }
        #expect(Self.note("").contains("ATT MTU 517 ([GATT] ExchangeMTU not set in /etc/bluetooth/main.conf: BlueZ's default)"))
        #expect(Self.note("[GATT]\nExchangeMTU = 516\n").contains("513-byte writes"))
    }

    @Test func an515OrLowerFits() {
        for (conf, mtu) in [
            ("[GATT]\nExchangeMTU = 515\n", 515), ("[GATT]\nExchangeMTU=247\r\n", 247), ("[GATT]\nExchangeMTU = 0x17\n", 23),
        ] {
            let note = Self.note(conf)
            #expect(note.hasPrefix("firmware: bluetoothd offers ATT MTU \(mtu) at most"), "\(note)")
            #expect(!note.contains("stalls"))
        }
    }

    @Test func unreadableSaysWhatToCheck() {
        #expect(FirmwareMTUAdvice.note(nil).hasPrefix("firmware: could not read bluetoothd's main.conf"))
    }
}
