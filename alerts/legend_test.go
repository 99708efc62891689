package alerts

import (
	"reflect"

	"gonum.org/v1/plot"
)

// legendTexts reads a legend's entry texts (gonum keeps them unexported).
func legendTexts(l plot.Legend) []string {
	v := reflect.ValueOf(l).FieldByName("entries")
	out := make([]string, v.Len())
	for i := range out {
		out[i] = v.Index(i).FieldByName("text").String()
	}
	return out
}
