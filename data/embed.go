// Package data embeds the files the binary needs without a checkout: the
// article schema, the demo configuration and the demo topics.
package data

import _ "embed"

// ArticleSchema is data/article.schema.json.
//
//go:embed article.schema.json
var ArticleSchema []byte

// DemoConfig is data/demo.yaml, the `run --demo` configuration; its
// base_url values are filled in with the loopback simulator addresses.
//
//go:embed demo.yaml
var DemoConfig []byte

// DemoTopics is data/demo-topics.yaml.
//
//go:embed demo-topics.yaml
var DemoTopics []byte
