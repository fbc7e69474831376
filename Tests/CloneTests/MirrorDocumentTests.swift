import BlueZTestSupport
import DeviceClone
import Profile
import Replica
import Testing

/// The relay's mirror is loaded from the replica's document in memory, not from text written and parsed back: the
/// document the decoder reads is the one the text would have given, and the profile loads the same.
@Suite struct MirrorDocumentTests {
    /// `node` without where it came from, to compare trees parsed from text with trees made in memory.
    static func shape(_ node: JSONNode) -> String {
        switch node.value {
        case .null: "null"
        case .bool(let bool): "\(bool)"
        case .number(let number): number.text
        case .string(let string): "\"\(string)\""
        case .array(let items): "[" + items.map(shape).joined(separator: ",") + "]"
        case .object(let members): "{" + members.map { "\($0.key):" + shape($0.value) }.joined(separator: ",") + "}"
        }
    }

    @Test(.timeLimit(.minutes(5))) func theMirrorsDocumentIsWhatItsTextWouldHaveBeen() async throws {
        let rig = try await Rig([Lock.peripheral()])
        let recording = try await rig.record(Lock.name)
        let built = ReplicaProfile(CloneReplica.make(recording)).build()
        let document = built.json.located(at: "relay of Lock-1.json")
        let parsed = try JSONParser.parse(Array(built.text.utf8), file: "relay of Lock-1.json")
        #expect(Self.shape(document) == Self.shape(parsed))
        let fromDocument = try ProfileLoader.load(document: document, file: "relay of Lock-1.json")
        let fromText = try ProfileLoader.load(json: built.text, file: "relay of Lock-1.json")
        #expect(fromDocument.services == fromText.services && fromDocument.advertisements == fromText.advertisements)
        #expect(fromDocument.security == fromText.security && fromDocument.rules.count == fromText.rules.count)
        #expect(fromDocument.characteristics.map(\.handle) == Lock.valueHandles.map(Optional.some))
    }

    /// A document the decoder refuses says where by its file and JSON path.
    @Test func aRefusedDocumentSaysTheJSONPath() {
        let document = JSONNode.object([("format", .int(1)), ("services", .array([.object([("id", .string("1bad"))])]))])
            .located(at: "mirror.json")
        do {
            _ = try ProfileLoader.load(document: document, file: "mirror.json")
            Issue.record("a bad document loaded")
        } catch {
            #expect("\(error)".contains("mirror.json:1:1 services[0].id"), "\(error)")
        }
    }
}
