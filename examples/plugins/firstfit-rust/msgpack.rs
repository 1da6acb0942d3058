//! Just enough MessagePack for the Drover ABI (docs/abi.md, section 3):
//! a decoder into a value tree and an encoder that writes the smallest
//! form of each value.

/// A decoded MessagePack value. Maps keep their keys in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Nil,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Bin(Vec<u8>),
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
    /// An extension (type, data): msgp encodes Go's time.Time as type 5.
    Ext(i8, Vec<u8>),
}

static NIL: Value = Value::Nil;

impl Value {
    /// The value under key in a map; Nil when absent (a missing key is
    /// the zero value).
    pub fn get(&self, key: &str) -> &Value {
        if let Value::Map(kv) = self {
            for (k, v) in kv {
                if let Value::Str(s) = k {
                    if s == key {
                        return v;
                    }
                }
            }
        }
        &NIL
    }
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }
    pub fn str(&self) -> &str {
        match self {
            Value::Str(s) => s,
            _ => "",
        }
    }
    pub fn u64(&self) -> u64 {
        match *self {
            Value::UInt(u) => u,
            Value::Int(i) if i >= 0 => i as u64,
            _ => 0,
        }
    }
    pub fn i64(&self) -> i64 {
        match *self {
            Value::Int(i) => i,
            Value::UInt(u) => u as i64,
            _ => 0,
        }
    }
    pub fn bool(&self) -> bool {
        matches!(self, Value::Bool(true))
    }
    pub fn array(&self) -> &[Value] {
        match self {
            Value::Array(a) => a,
            _ => &[],
        }
    }
    pub fn entries(&self) -> &[(Value, Value)] {
        match self {
            Value::Map(kv) => kv,
            _ => &[],
        }
    }
    /// A copy of a map with key set to v (added when absent).
    pub fn with(&self, key: &str, v: Value) -> Value {
        let mut kv = self.entries().to_vec();
        match kv.iter_mut().find(|(k, _)| k.str() == key) {
            Some(e) => e.1 = v,
            None => kv.push((Value::Str(key.to_string()), v)),
        }
        Value::Map(kv)
    }
}

/// Decodes one value from the start of b.
pub fn decode(b: &[u8]) -> Result<Value, String> {
    let mut d = Decoder { b, i: 0 };
    d.value(0)
}

struct Decoder<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Decoder<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.b.len() - self.i < n {
            return Err(format!("msgpack: truncated at byte {}", self.i));
        }
        let s = &self.b[self.i..self.i + n];
        self.i += n;
        Ok(s)
    }
    fn be(&mut self, n: usize) -> Result<u64, String> {
        Ok(self.take(n)?.iter().fold(0u64, |a, &x| a << 8 | x as u64))
    }
    fn string(&mut self, n: usize) -> Result<Value, String> {
        let s = self.take(n)?;
        String::from_utf8(s.to_vec()).map(Value::Str).map_err(|_| "msgpack: invalid UTF-8".to_string())
    }
    fn array(&mut self, n: usize, depth: u32) -> Result<Value, String> {
        let mut a = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            a.push(self.value(depth + 1)?);
        }
        Ok(Value::Array(a))
    }
    fn map(&mut self, n: usize, depth: u32) -> Result<Value, String> {
        let mut kv = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            let k = self.value(depth + 1)?;
            let v = self.value(depth + 1)?;
            kv.push((k, v));
        }
        Ok(Value::Map(kv))
    }
    fn ext(&mut self, n: usize) -> Result<Value, String> {
        let t = self.take(1)?[0] as i8;
        Ok(Value::Ext(t, self.take(n)?.to_vec()))
    }
    fn value(&mut self, depth: u32) -> Result<Value, String> {
        if depth > 256 {
            return Err("msgpack: nested too deep".to_string());
        }
        let c = self.take(1)?[0];
        Ok(match c {
            0x00..=0x7f => Value::UInt(c as u64),
            0x80..=0x8f => return self.map((c & 0x0f) as usize, depth),
            0x90..=0x9f => return self.array((c & 0x0f) as usize, depth),
            0xa0..=0xbf => return self.string((c & 0x1f) as usize),
            0xc0 => Value::Nil,
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xc4 | 0xc5 | 0xc6 => {
                let n = self.be(1 << (c - 0xc4))? as usize;
                Value::Bin(self.take(n)?.to_vec())
            }
            0xc7 | 0xc8 | 0xc9 => {
                let n = self.be(1 << (c - 0xc7))? as usize;
                return self.ext(n);
            }
            0xca => Value::Float(f32::from_bits(self.be(4)? as u32) as f64),
            0xcb => Value::Float(f64::from_bits(self.be(8)?)),
            0xcc..=0xcf => Value::UInt(self.be(1 << (c - 0xcc))?),
            0xd0 => Value::Int(self.be(1)? as u8 as i8 as i64),
            0xd1 => Value::Int(self.be(2)? as u16 as i16 as i64),
            0xd2 => Value::Int(self.be(4)? as u32 as i32 as i64),
            0xd3 => Value::Int(self.be(8)? as i64),
            0xd4..=0xd8 => return self.ext(1 << (c - 0xd4)),
            0xd9 | 0xda | 0xdb => {
                let n = self.be(1 << (c - 0xd9))? as usize;
                return self.string(n);
            }
            0xdc | 0xdd => {
                let n = self.be(2 << (c - 0xdc))? as usize;
                return self.array(n, depth);
            }
            0xde | 0xdf => {
                let n = self.be(2 << (c - 0xde))? as usize;
                return self.map(n, depth);
            }
            0xe0..=0xff => Value::Int(c as i8 as i64),
            0xc1 => return Err("msgpack: reserved byte 0xc1".to_string()),
        })
    }
}

/// Writes MessagePack into a byte vector.
#[derive(Default)]
pub struct Encoder {
    pub buf: Vec<u8>,
}

impl Encoder {
    fn head(&mut self, fix: u8, fixmax: usize, c16: u8, c32: u8, n: usize) {
        if n <= fixmax {
            self.buf.push(fix | n as u8);
        } else if n <= 0xffff {
            self.buf.push(c16);
            self.buf.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            self.buf.push(c32);
            self.buf.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }
    pub fn map(&mut self, n: usize) -> &mut Self {
        self.head(0x80, 15, 0xde, 0xdf, n);
        self
    }
    pub fn array(&mut self, n: usize) -> &mut Self {
        self.head(0x90, 15, 0xdc, 0xdd, n);
        self
    }
    pub fn str(&mut self, s: &str) -> &mut Self {
        let n = s.len();
        if n <= 31 {
            self.buf.push(0xa0 | n as u8);
        } else if n <= 0xff {
            self.buf.push(0xd9);
            self.buf.push(n as u8);
        } else {
            self.head(0, 0, 0xda, 0xdb, n);
        }
        self.buf.extend_from_slice(s.as_bytes());
        self
    }
    pub fn nil(&mut self) -> &mut Self {
        self.buf.push(0xc0);
        self
    }
    pub fn bool(&mut self, b: bool) -> &mut Self {
        self.buf.push(if b { 0xc3 } else { 0xc2 });
        self
    }
    pub fn uint(&mut self, u: u64) -> &mut Self {
        if u <= 0x7f {
            self.buf.push(u as u8);
        } else if u <= 0xff {
            self.buf.extend_from_slice(&[0xcc, u as u8]);
        } else if u <= 0xffff {
            self.buf.push(0xcd);
            self.buf.extend_from_slice(&(u as u16).to_be_bytes());
        } else if u <= 0xffff_ffff {
            self.buf.push(0xce);
            self.buf.extend_from_slice(&(u as u32).to_be_bytes());
        } else {
            self.buf.push(0xcf);
            self.buf.extend_from_slice(&u.to_be_bytes());
        }
        self
    }
    pub fn int(&mut self, i: i64) -> &mut Self {
        if i >= 0 {
            return self.uint(i as u64);
        }
        if i >= -32 {
            self.buf.push(i as i8 as u8);
        } else if i >= i32::MIN as i64 {
            self.buf.push(0xd2);
            self.buf.extend_from_slice(&(i as i32).to_be_bytes());
        } else {
            self.buf.push(0xd3);
            self.buf.extend_from_slice(&i.to_be_bytes());
        }
        self
    }
    /// Writes a decoded value back as it came (extensions included).
    pub fn value(&mut self, v: &Value) -> &mut Self {
        match v {
            Value::Nil => self.nil(),
            Value::Bool(b) => self.bool(*b),
            Value::Int(i) => self.int(*i),
            Value::UInt(u) => self.uint(*u),
            Value::Float(f) => {
                self.buf.push(0xcb);
                self.buf.extend_from_slice(&f.to_bits().to_be_bytes());
                self
            }
            Value::Str(s) => self.str(s),
            Value::Bin(b) => {
                if b.len() <= 0xff {
                    self.buf.extend_from_slice(&[0xc4, b.len() as u8]);
                } else {
                    self.buf.push(0xc6);
                    self.buf.extend_from_slice(&(b.len() as u32).to_be_bytes());
                }
                self.buf.extend_from_slice(b);
                self
            }
            Value::Array(a) => {
                self.array(a.len());
                for x in a {
                    self.value(x);
                }
                self
            }
            Value::Map(kv) => {
                self.map(kv.len());
                for (k, x) in kv {
                    self.value(k);
                    self.value(x);
                }
                self
            }
            Value::Ext(t, d) => {
                match d.len() {
                    1 => self.buf.push(0xd4),
                    2 => self.buf.push(0xd5),
                    4 => self.buf.push(0xd6),
                    8 => self.buf.push(0xd7),
                    16 => self.buf.push(0xd8),
                    n if n <= 0xff => self.buf.extend_from_slice(&[0xc7, n as u8]),
                    n if n <= 0xffff => {
                        self.buf.push(0xc8);
                        self.buf.extend_from_slice(&(n as u16).to_be_bytes());
                    }
                    n => {
                        self.buf.push(0xc9);
                        self.buf.extend_from_slice(&(n as u32).to_be_bytes());
                    }
                }
                self.buf.push(*t as u8);
                self.buf.extend_from_slice(d);
                self
            }
        }
    }
}
