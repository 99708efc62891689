package chain

import (
	"context"
	"reflect"
	"testing"
)

// TestForRunKeepsEverySetting fills every exported field of a Chain and
// checks that ForRun carries each one over: a field added to Chain and
// forgotten in ForRun would be lost between the runs of serve and of the
// simulator.
func TestForRunKeepsEverySetting(t *testing.T) {
	var c Chain
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if !v.Type().Field(i).IsExported() {
			continue
		}
		fillNonZero(t, v.Type().Field(i).Name, f)
	}
	got := reflect.ValueOf(c.ForRun()).Elem()
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		if got.Field(i).IsZero() {
			t.Errorf("ForRun dropped Chain.%s", sf.Name)
		}
	}
}

// notifyNone is a Notifier that drops every alert.
type notifyNone struct{}

func (notifyNone) Notify(context.Context, Alert) error { return nil }

// fillNonZero sets f to some non-zero value of its type.
func fillNonZero(t *testing.T, name string, f reflect.Value) {
	t.Helper()
	switch f.Kind() {
	case reflect.Slice:
		f.Set(reflect.MakeSlice(f.Type(), 1, 1))
	case reflect.Func:
		f.Set(reflect.MakeFunc(f.Type(), func([]reflect.Value) []reflect.Value {
			out := make([]reflect.Value, f.Type().NumOut())
			for i := range out {
				out[i] = reflect.Zero(f.Type().Out(i))
			}
			return out
		}))
	case reflect.Int, reflect.Int64:
		f.SetInt(1)
	case reflect.Interface:
		for _, v := range []any{newMemStore(), markerGate{}, RealClock{}, notifyNone{}} {
			if reflect.TypeOf(v).Implements(f.Type()) {
				f.Set(reflect.ValueOf(v))
				return
			}
		}
		t.Fatalf("Chain.%s: no fill for %s", name, f.Type())
	case reflect.Struct:
		for i := range f.NumField() {
			if f.Type().Field(i).IsExported() {
				fillNonZero(t, name+"."+f.Type().Field(i).Name, f.Field(i))
				return
			}
		}
		t.Fatalf("Chain.%s: no exported field to fill", name)
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Float64:
		f.SetFloat(1)
	default:
		t.Fatalf("Chain.%s: no fill for kind %s", name, f.Kind())
	}
}
