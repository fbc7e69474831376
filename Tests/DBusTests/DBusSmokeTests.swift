import Testing
@testable import DBus

@Test func DBusModuleLoads() { #expect(Bool(true)) }
