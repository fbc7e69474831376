/// The JSON tree is part of Profile's interface (the loader reads documents, diagnostics name their locations):
/// a module that imports Profile has it too.
@_exported import JSON
