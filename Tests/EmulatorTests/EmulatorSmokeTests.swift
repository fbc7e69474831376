import Testing
@testable import Emulator

@Test func EmulatorModuleLoads() { #expect(Bool(true)) }
