package config

// PricesAsOf is the date the built-in price table was last checked against
// the providers' public price lists.
const PricesAsOf = "2026-11-15"

// builtinPrice is the list price (USD per million tokens) of the models the
// example config and the demo use, keyed by model id. A link's own price:
// overrides it; a model not listed has no known price.
func builtinPrice(model string) (Price, bool) {
	switch model {
	case "gemini-flash-latest", "gemini-2.5-flash": // Google AI Studio, paid tier
		return Price{InputPerMTok: 0.30, OutputPerMTok: 2.50}, true
	case "llama-3.3-70b-versatile": // Groq
		return Price{InputPerMTok: 0.59, OutputPerMTok: 0.79}, true
	case "gpt-oss-120b": // Cerebras
		return Price{InputPerMTok: 0.35, OutputPerMTok: 0.75}, true
	case "meta-llama/llama-3.3-70b-instruct": // OpenRouter (its usage.cost wins when reported)
		return Price{InputPerMTok: 0.12, OutputPerMTok: 0.30}, true
	case "meta-llama/llama-3.3-70b-instruct:free", "openrouter/free":
		return Price{}, true
	}
	return Price{}, false
}
