import Bluetooth
import Testing

@Suite struct AttributeHandleTests {
    @Test func printsAsFourLowerCaseHexDigits() {
        #expect(AttributeHandle(rawValue: 0x002A).description == "0x002a")
        #expect(AttributeHandle(rawValue: 0xBEEF).description == "0xbeef")
        #expect(AttributeHandle(rawValue: 0x0000).description == "0x0000")
        #expect(AttributeHandle(rawValue: 0xFFFF).description == "0xffff")
        let literal: AttributeHandle = 0x0100
        #expect(literal == AttributeHandle(rawValue: 256) && literal.rawValue == 256)
    }

    @Test func ordersByNumber() {
        let handles: [AttributeHandle] = [0xFFFF, 0x0100, 0x0001, 0x00FF, 0x0020]
        #expect(handles.sorted() == [0x0001, 0x0020, 0x00FF, 0x0100, 0xFFFF])
        #expect(AttributeHandle(rawValue: 0x00FF) < 0x0100)
        #expect(!(AttributeHandle(rawValue: 0x0100) < 0x0100))
        #expect(handles.max() == 0xFFFF)
    }

    @Test func nextStopsAtTheLastHandle() {
        #expect(AttributeHandle(rawValue: 0x0000).next == 0x0001)
        #expect(AttributeHandle(rawValue: 0x00FF).next == 0x0100)
        #expect(AttributeHandle(rawValue: 0xFFFE).next == 0xFFFF)
        #expect(AttributeHandle(rawValue: 0xFFFF).next == nil)
    }
}
