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
}
