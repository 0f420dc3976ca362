package strictjson

// Exported for the tests of package strictjson_test.
var (
	CheckType        = checkType
	FirstInvalidText = firstInvalidText
	PlainMemberNames = plainMemberNames
	WalkMemberNames  = walkMemberNames
)
