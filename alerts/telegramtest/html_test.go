package telegramtest

import "testing"

func TestParseHTML(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"plain text", "plain text", true},
		{"<b>bold</b> <strong>s</strong> <i>i</i> <em>e</em> <u>u</u> <ins>n</ins> <s>s</s> <strike>k</strike> <del>d</del>", "bold s i e u n s k d", true},
		{`<span class="tg-spoiler">x</span>`, "x", true},
		{`<a href="https://example.org/a?b=1&amp;c=2">link</a>`, "link", true},
		{"<code>x &lt; y</code>", "x < y", true},
		{"<pre>a\n  b</pre>", "a\n  b", true},
		{`<pre><code class="language-go">x := 1</code></pre>`, "x := 1", true},
		{"<blockquote>q</blockquote>", "q", true},
		{"&lt;&gt;&amp;&quot;", `<>&"`, true},
		{"<b><i>nested</i></b>", "nested", true},
		{"a < b", "", false},                              // bare <
		{"a > b", "", false},                              // bare >
		{"a & b", "", false},                              // bare &
		{"&nbsp;", "", false},                             // unknown entity
		{"<b>open", "", false},                            // unbalanced
		{"<b><i>x</b></i>", "", false},                    // badly nested
		{"</b>", "", false},                               // close without open
		{"<table>x</table>", "", false},                   // unknown tag
		{"<br>", "", false},                               // unknown tag
		{`<b class="x">x</b>`, "", false},                 // attribute not allowed
		{`<span>x</span>`, "", false},                     // span without the spoiler class
		{`<a>x</a>`, "", false},                           // a without href
		{"<code><b>x</b></code>", "", false},              // nothing inside code
		{"<pre><b>x</b></pre>", "", false},                // only code inside pre
		{`<code class="language-go">x</code>`, "", false}, // class only on pre's code
		{"<b", "", false},
	} {
		got, err := ParseHTML(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParseHTML(%q) = %q, %v; want ok=%v %q", c.in, got, err, c.ok, c.want)
		}
	}
}
