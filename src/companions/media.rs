//! What a media file is, from its first bytes: a name is whatever the sender typed, and a
//! "photo.jpg" that is a script must not be sent to a vision model as an image.

use super::role::Modality;

/// A recognized media type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MediaKind {
    pub modality: Modality,
    pub mime: &'static str,
    /// The extension a transcription endpoint expects in the file name.
    pub extension: &'static str,
}

const fn kind(modality: Modality, mime: &'static str, extension: &'static str) -> MediaKind {
    MediaKind {
        modality,
        mime,
        extension,
    }
}

/// The media type of `head` (the file's first bytes; 16 are enough), if it is one we know.
#[must_use]
pub fn detect(head: &[u8]) -> Option<MediaKind> {
    use Modality::{Audio, Image, Video};
    let at = |offset: usize, magic: &[u8]| head.get(offset..offset + magic.len()) == Some(magic);
    if at(0, b"\x89PNG\r\n\x1a\n") {
        return Some(kind(Image, "image/png", "png"));
    }
    if at(0, b"\xff\xd8\xff") {
        return Some(kind(Image, "image/jpeg", "jpg"));
    }
    if at(0, b"GIF87a") || at(0, b"GIF89a") {
        return Some(kind(Image, "image/gif", "gif"));
    }
    if at(0, b"RIFF") && at(8, b"WEBP") {
        return Some(kind(Image, "image/webp", "webp"));
    }
    if at(0, b"RIFF") && at(8, b"WAVE") {
        return Some(kind(Audio, "audio/wav", "wav"));
    }
    if at(0, b"OggS") {
        return Some(kind(Audio, "audio/ogg", "ogg"));
    }
    if at(0, b"ID3") || at(0, b"\xff\xfb") || at(0, b"\xff\xf3") || at(0, b"\xff\xf2") {
        return Some(kind(Audio, "audio/mpeg", "mp3"));
    }
    if at(0, b"fLaC") {
        return Some(kind(Audio, "audio/flac", "flac"));
    }
    if at(4, b"ftyp") {
        // MP4 family: M4A is audio, the rest video.
        return Some(if at(8, b"M4A ") {
            kind(Audio, "audio/mp4", "m4a")
        } else {
            kind(Video, "video/mp4", "mp4")
        });
    }
    if at(0, b"\x1a\x45\xdf\xa3") {
        return Some(kind(Video, "video/webm", "webm"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_come_from_the_bytes() {
        assert_eq!(
            detect(b"\x89PNG\r\n\x1a\n....").map(|k| k.mime),
            Some("image/png")
        );
        assert_eq!(
            detect(b"\xff\xd8\xff\xe0xx").map(|k| k.mime),
            Some("image/jpeg")
        );
        assert_eq!(
            detect(b"OggS\0\x02").map(|k| k.modality),
            Some(Modality::Audio)
        );
        assert_eq!(
            detect(b"RIFF\0\0\0\0WAVEfmt ").map(|k| k.mime),
            Some("audio/wav")
        );
        assert_eq!(
            detect(b"\0\0\0\x20ftypisom").map(|k| k.modality),
            Some(Modality::Video)
        );
        assert_eq!(
            detect(b"\0\0\0\x20ftypM4A ").map(|k| k.mime),
            Some("audio/mp4")
        );
        // A script named photo.jpg is not an image.
        assert_eq!(detect(b"#!/bin/sh\nrm -rf ~"), None);
        assert_eq!(detect(b""), None);
    }
}
