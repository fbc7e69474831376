import Testing
@testable import BlueZ

@Test func BlueZModuleLoads() { #expect(Bool(true)) }
