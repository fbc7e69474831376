import Profile

/// A JSON file the command line reads besides profiles (a scenario, a rig file, a fault for `ctl fault add`): read
/// with a profile's bound (``ProfileLimits/fileSize``) and parsed with locations. A file that cannot be read, is too
/// large or is not JSON is bad input (exit 2) naming it as `what`.
func readJSONFile(_ path: String, what: String) throws -> (root: JSONNode, bytes: [UInt8]) {
    let bytes: [UInt8]
    switch ProfileFiles.read(path, requireRegularFile: false) {
    case .success(let read): bytes = read
    case .failure(let problem): throw Failure.badInput("\(path): \(what) \(problem.message)")
    }
    do {
        return (try JSONParser.parse(bytes, file: path), bytes)
    } catch {
        throw Failure.badInput(error.description)
    }
}
