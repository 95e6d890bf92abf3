package responses

// NamespaceSep joins a namespace and a function name into the one chat
// function name a translated namespace tool is offered as
// ("multi_agent_v1__spawn_agent"); the encoder splits a call back into the
// function_call item's namespace and name.
const NamespaceSep = "__"

// maxFunctionName is the longest function name chat APIs accept.
const maxFunctionName = 64
