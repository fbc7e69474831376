extension Substring {
    /// Without the spaces and tabs around it: the optional whitespace of an HTTP header value, the blanks around a
    /// key file's key and value. Other whitespace (a line end, a no-break space) stays.
    public var trimmingBlanks: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
