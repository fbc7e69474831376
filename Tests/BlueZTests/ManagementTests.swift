import Bluetooth
import Testing

@testable import BlueZ

/// The management channel's answers are bytes from the kernel: parsed with every length checked.
@Suite struct ManagementTests {
    /// An event as the kernel sends it: code, index, length, parameters (little-endian).
    func event(_ code: UInt16, index: UInt16, _ parameters: [UInt8]) -> ArraySlice<UInt8> {
        let count = UInt16(parameters.count)
        return ArraySlice(
            [UInt8(code & 0xFF), UInt8(code >> 8), UInt8(index & 0xFF), UInt8(index >> 8), UInt8(count & 0xFF), UInt8(count >> 8)]
                + parameters)
    }

    @Test func commandCompleteForTheCommandAndControllerIsTheAnswer() throws {
        let answer = try ManagementSocket.answer(
            to: .setStaticAddress, index: 3, in: event(0x0001, index: 3, [0x2B, 0x00, 0x00, 0xAA, 0xBB]))
        #expect(answer == [0xAA, 0xBB])
    }

    @Test func otherEventsControllersAndCommandsAreSkipped() throws {
        #expect(try ManagementSocket.answer(to: .setStaticAddress, index: 3, in: event(0x0001, index: 2, [0x2B, 0x00, 0x00])) == nil)
        #expect(try ManagementSocket.answer(to: .setStaticAddress, index: 3, in: event(0x0001, index: 3, [0x04, 0x00, 0x00])) == nil)
        #expect(try ManagementSocket.answer(to: .setStaticAddress, index: 3, in: event(0x0006, index: 3, [0x2B, 0x00, 0x00])) == nil)
        // Interim Command Status with success: the Command Complete is still to come.
        #expect(try ManagementSocket.answer(to: .setStaticAddress, index: 3, in: event(0x0002, index: 3, [0x2B, 0x00, 0x00])) == nil)
    }

    @Test func shortOrLyingEventsAreSkippedNotTrusted() throws {
        #expect(try ManagementSocket.answer(to: .setStaticAddress, index: 0, in: [0x01, 0x00, 0x00]) == nil)
        // The length claims more than arrived, and less than an answer needs.
        #expect(try ManagementSocket.answer(to: .setStaticAddress, index: 0, in: [0x01, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0x2B]) == nil)
        #expect(
            try ManagementSocket.answer(to: .setStaticAddress, index: 0, in: [0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x2B, 0x00, 0x00]) == nil)
    }

    @Test func failureStatusesThrowWithAReason() {
        #expect(throws: ManagementError.status("Set Static Address", 0x14)) {
            try ManagementSocket.answer(to: .setStaticAddress, index: 1, in: event(0x0002, index: 1, [0x2B, 0x00, 0x14]))
        }
        #expect(ManagementError.status("Set Static Address", 0x14).description.contains("CAP_NET_ADMIN"))
        #expect(ManagementError.status("Set Static Address", 0x0B).description.contains("powered"))
        #expect(ManagementError.status("X", 0x42).description.contains("0x42"))
        #expect(ManagementError.status("X", 0x05).description.contains("0x05"))
    }

    @Test func controllerInformationAndNames() throws {
        var parameters: [UInt8] = [0x55, 0x44, 0x33, 0x22, 0x11, 0x00, 0x09, 0x02, 0x00]
        parameters += [0xFF, 0xFF, 0x01, 0x00]  // supported: everything up to static address, and privacy
        parameters += [0x01, 0x20, 0x00, 0x00]  // current: powered, privacy
        let information = try #require(ControllerManagement.Information(parameters))
        #expect(information.publicAddress.description == "00:11:22:33:44:55")
        #expect(information.powered && information.privacy && information.supportsPrivacy)
        #expect(ControllerManagement.Information(Array(parameters.prefix(16))) == nil)
        #expect(ControllerManagement(adapterName: "hci12")?.index == 12)
        for bad in ["hci", "hci-1", "hci01", "usb0", "hci99999"] { #expect(ControllerManagement(adapterName: bad) == nil, "\(bad)") }
    }

    @Test func configurationTellsWhetherThePublicAddressCanBeSet() throws {
        // Manufacturer 0x0002, supported: external configuration and public address, missing: none.
        let settable = try #require(ControllerManagement.Configuration([0x02, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]))
        #expect(settable.supportsPublicAddress && settable.supportedOptions == 0x03 && settable.missingOptions == 0)
        // hci_vhci's answer: no option at all.
        let fixed = try #require(ControllerManagement.Configuration([0x3F, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]))
        #expect(!fixed.supportsPublicAddress)
        // Only external configuration, and the public address missing (an unconfigured controller).
        let missing = try #require(ControllerManagement.Configuration([0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00]))
        #expect(!missing.supportsPublicAddress && missing.missingOptions == 0x02)
        #expect(ControllerManagement.Configuration([0x02, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]) == nil)
    }

    @Test func setPublicAddressAnswersAndRefusals() throws {
        #expect(ManagementSocket.Opcode.setPublicAddress.rawValue == 0x0039)
        #expect(ManagementSocket.Opcode.readControllerConfiguration.rawValue == 0x0037)
        // Command Complete: Missing_Options (4 octets).
        let answer = try ManagementSocket.answer(
            to: .setPublicAddress, index: 2, in: event(0x0001, index: 2, [0x39, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]))
        #expect(answer == [0x00, 0x00, 0x00, 0x00])
        #expect(throws: ManagementError.status("Set Public Address", 0x0C)) {
            try ManagementSocket.answer(to: .setPublicAddress, index: 2, in: event(0x0002, index: 2, [0x39, 0x00, 0x0C]))
        }
        #expect(ManagementError.status("Set Public Address", 0x0C).description == "Set Public Address: not supported by this controller")
        #expect(throws: ManagementError.status("Set Public Address", 0x0B)) {
            try ManagementSocket.answer(to: .setPublicAddress, index: 2, in: event(0x0001, index: 2, [0x39, 0x00, 0x0B]))
        }
        // The address goes least significant byte first, as in every management command.
        let address = try #require(BluetoothAddress("00:AA:01:03:00:03"))
        #expect(address.littleEndian == [0x03, 0x00, 0x03, 0x01, 0xAA, 0x00])
    }

    @Test func indexListReadsOnlyTheIndexesThatArrived() throws {
        #expect(ControllerManagement.indexes([0x02, 0x00, 0x01, 0x00, 0x03, 0x00]) == [1, 3])
        #expect(ControllerManagement.indexes([0x00, 0x00]) == [])
        // The count claims more than arrived: only whole indexes that arrived are read.
        #expect(ControllerManagement.indexes([0xFF, 0xFF, 0x04, 0x00, 0x05]) == [4])
        #expect(ControllerManagement.indexes([0x01]) == nil)
        // The kernel's answer to Read Controller Index List is for no controller (0xFFFF).
        #expect(
            try ManagementSocket.answer(
                to: .readControllerIndexList, index: 0xFFFF, in: event(0x0001, index: 0xFFFF, [0x03, 0x00, 0x00, 0x01, 0x00, 0x07, 0x00]))
                == [0x01, 0x00, 0x07, 0x00])
    }
}
